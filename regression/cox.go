package regression

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/projection"
	"gonum.org/v1/gonum/mat"
)

// Ties is the Cox partial-likelihood approximation for tied event times.
type Ties string

// Tie handling, as R coxph's ties argument.
const (
	TiesEfron   Ties = "efron"
	TiesBreslow Ties = "breslow"
)

// ProjectionKind selects the HPPCox projection applied before the Cox fit.
type ProjectionKind string

// Projections (paper 003). None of them is a formal privacy mechanism.
const (
	ProjectionNone    ProjectionKind = "none"
	ProjectionRandom  ProjectionKind = "random"
	ProjectionOptimal ProjectionKind = "optimal"
)

// ProjectionOptions configures HPPCox.
type ProjectionOptions struct {
	Kind ProjectionKind
	// Dims is m, the projected dimension (m < number of covariates).
	Dims int
	// TripletsPerSite is the public number of triplets each site samples
	// for the optimal projection's LP; 0 means projection.DefaultTriplets.
	TripletsPerSite int
	// L1 is the LP's sparsity weight lambda; 0 means projection.DefaultL1.
	L1 float64
}

// CoxOptions configures FitCox.
type CoxOptions struct {
	Ties Ties // default efron
	// Scaling, if non-nil, centres and scales the covariates and clips each
	// row to the unit ball (the preprocessing of the discrete-time model),
	// so that coefficients are comparable with FitDiscrete's beta. nil fits
	// the covariates as given (as R coxph does).
	Scaling    *Scaling
	Projection ProjectionOptions
	Covariates []string
	// MaxIter bounds Newton–Raphson iterations (0 means 50); Eps is the
	// convergence tolerance on the relative change of the log partial
	// likelihood (0 means 1e-12; R's default is 1e-9).
	MaxIter int
	Eps     float64
}

// ProjectionInfo describes the HPPCox projection of a Cox fit.
type ProjectionInfo struct {
	Kind ProjectionKind `json:"kind"`
	// Dims is the projected dimension used: the requested m, or the rank
	// of the optimal A when that is lower (a warning says so).
	Dims      int    `json:"dims"`
	DimsAsked int    `json:"dims_requested"`
	Guarantee string `json:"guarantee"`
	// B is the d x m projection matrix, z = B'x.
	B [][]float64 `json:"b"`
	// Kept lists the covariates with a non-zero row of B (feature selection
	// of the optimal projection).
	Kept []int `json:"kept"`
	// BetaX = B beta, the implied coefficients on the original covariates.
	BetaX    []float64 `json:"beta_x"`
	Triplets int       `json:"triplets,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
}

// CoxResult is a Cox proportional-hazards fit; names follow R's coxph.
type CoxResult struct {
	Method       string    `json:"method"`
	Ties         Ties      `json:"ties"`
	Epsilon      Epsilon   `json:"epsilon"`
	Guarantee    string    `json:"guarantee"`
	Neighbouring string    `json:"neighbouring"`
	N            int64     `json:"n"`
	NEvent       int64     `json:"nevent"`
	Beta         []float64 `json:"beta"`
	SE           []float64 `json:"se"`
	Z            []float64 `json:"z"`
	P            []float64 `json:"p"`
	// ExpCoef is exp(beta), the hazard ratio per unit of each covariate,
	// and ExpCoefLower/ExpCoefUpper its Wald interval at Conf,
	// exp(beta -/+ z se), as R's summary.coxph prints them (exp(coef),
	// lower .95, upper .95).
	ExpCoef      []float64 `json:"exp_coef"`
	ExpCoefLower []float64 `json:"exp_coef_lower"`
	ExpCoefUpper []float64 `json:"exp_coef_upper"`
	Conf         float64   `json:"conf"`
	// LRTest is the likelihood-ratio test of all coefficients against
	// beta = 0 (summary.coxph's "Likelihood ratio test").
	LRTest *ChiSqTest `json:"lr_test,omitempty"`
	// LogLik is the log partial likelihood at beta = 0 and at the estimate.
	LogLik     []float64       `json:"loglik"`
	Iterations int             `json:"iterations"`
	Covariates []string        `json:"covariates,omitempty"`
	Projection *ProjectionInfo `json:"projection,omitempty"`
}

// FitCox fits a Cox proportional-hazards model by Newton–Raphson with step
// halving, as R's coxph does (same start beta = 0, centred covariates, log
// partial likelihood with Efron or Breslow ties, standard errors from the
// inverse information at the estimate). With a projection, each site's
// covariates are projected (z = B'x) and the Cox model is fitted on the
// pooled projections; src is used only by the projections.
func FitCox(data Data, opts CoxOptions, src dp.Source) (CoxResult, error) {
	res, err := fitCox(data, opts, src)
	if err != nil {
		return CoxResult{}, fmt.Errorf("fit cox: %w", err)
	}
	return res, nil
}

func fitCox(data Data, opts CoxOptions, src dp.Source) (CoxResult, error) {
	if err := data.validate(); err != nil {
		return CoxResult{}, err
	}
	if opts.Ties == "" {
		opts.Ties = TiesEfron
	}
	if opts.Ties != TiesEfron && opts.Ties != TiesBreslow {
		return CoxResult{}, fmt.Errorf("unknown ties %q (want efron or breslow)", string(opts.Ties))
	}
	if opts.MaxIter == 0 {
		opts.MaxIter = 50
	}
	if opts.Eps == 0 {
		opts.Eps = 1e-12
	}
	n, p := data.Len(), data.Covariates()
	if p == 0 {
		return CoxResult{}, errors.New("no covariates")
	}
	if n > math.MaxInt32 {
		return CoxResult{}, fmt.Errorf("%d records: at most %d", n, math.MaxInt32)
	}
	if opts.Covariates != nil && len(opts.Covariates) != p {
		return CoxResult{}, fmt.Errorf("%d covariate names for %d covariates", len(opts.Covariates), p)
	}
	kind := opts.Projection.Kind
	if kind == "" {
		kind = ProjectionNone
	}
	// The covariates: data.X as given, or a row-major copy when they are
	// scaled or projected.
	rows := data.X
	var x []float64
	if opts.Scaling != nil {
		if err := opts.Scaling.validate(p); err != nil {
			return CoxResult{}, err
		}
		x, _ = opts.Scaling.apply(data.X, p)
		rows = nil
	} else if kind != ProjectionNone {
		x = make([]float64, 0, n*p)
		for _, row := range data.X {
			x = append(x, row...)
		}
		rows = nil
	}
	res := CoxResult{
		Method: "cox", Ties: opts.Ties, Epsilon: Epsilon(math.Inf(1)),
		Guarantee: GuaranteeNone, Neighbouring: NeighbouringNone,
		N: int64(n), Covariates: opts.Covariates,
	}
	if kind != ProjectionNone {
		info, z, err := projectSites(data, x, p, opts.Projection, src)
		if err != nil {
			return CoxResult{}, err
		}
		res.Projection = info
		res.Guarantee = GuaranteeHeuristic
		x, p = z, info.Dims
	}
	fit, err := coxNewton(data.Time, data.Event, rows, x, p, opts)
	if err != nil {
		return CoxResult{}, err
	}
	res.Beta, res.SE, res.LogLik, res.Iterations = fit.beta, fit.se, fit.loglik, fit.iter
	res.Z = make([]float64, p)
	res.P = make([]float64, p)
	for j := range res.Beta {
		res.Z[j] = res.Beta[j] / res.SE[j]
		res.P[j] = math.Erfc(math.Abs(res.Z[j]) / math.Sqrt2)
	}
	res.ExpCoef, res.ExpCoefLower, res.ExpCoefUpper, res.Conf = coxHazardRatios(res.Beta, res.SE, 0.95)
	res.LRTest = coxLRTest(res.LogLik, p)
	for _, e := range data.Event {
		if e {
			res.NEvent++
		}
	}
	if res.Projection != nil {
		info := res.Projection
		info.BetaX = make([]float64, len(info.B))
		for l, row := range info.B {
			for c, b := range row {
				info.BetaX[l] += b * res.Beta[c]
			}
		}
	}
	return res, nil
}

// projectSites runs the HPPCox protocol: the projection matrix is agreed
// (random, or the LP over triplet constraints each site computes from its
// own records and shares), then each site projects its rows.
func projectSites(data Data, x []float64, p int, po ProjectionOptions, src dp.Source) (*ProjectionInfo, []float64, error) {
	if src == nil {
		return nil, nil, errors.New("a projection needs a randomness source")
	}
	info := &ProjectionInfo{Kind: po.Kind, DimsAsked: po.Dims, Guarantee: GuaranteeHeuristic}
	var proj *projection.Projection
	var err error
	switch po.Kind {
	case ProjectionRandom:
		proj, err = projection.Random(p, po.Dims, src)
	case ProjectionOptimal:
		// group rows by site; each site computes its own constraints
		order := []string{}
		rows := map[string][]int{}
		for i := 0; i < data.Len(); i++ {
			s := ""
			if len(data.Site) > 0 {
				s = data.Site[i]
			}
			if _, ok := rows[s]; !ok {
				order = append(order, s)
			}
			rows[s] = append(rows[s], i)
		}
		sort.Strings(order)
		var cons []projection.Constraint
		for _, s := range order {
			idx := rows[s]
			sx := make([][]float64, len(idx))
			st := make([]float64, len(idx))
			for k, i := range idx {
				sx[k] = x[i*p : (i+1)*p]
				st[k] = data.Time[i]
			}
			c, err := projection.SiteConstraints(sx, st, po.TripletsPerSite, src)
			if err != nil {
				return nil, nil, fmt.Errorf("site %q: %w", s, err)
			}
			cons = append(cons, c...)
		}
		info.Triplets = len(cons)
		proj, err = projection.Optimal(p, po.Dims, cons, projection.OptimalOptions{L1: po.L1})
	default:
		return nil, nil, fmt.Errorf("unknown projection %q (want none, random or optimal)", string(po.Kind))
	}
	if err != nil {
		return nil, nil, err
	}
	_, info.Dims = proj.Dims() // the rank if the LP's A has rank below m
	info.B = proj.Matrix()
	info.Kept = proj.Kept()
	info.Warnings = proj.Warnings()
	z := make([]float64, 0, data.Len()*info.Dims)
	for i := 0; i < data.Len(); i++ {
		z = append(z, proj.Apply(x[i*p:(i+1)*p])...)
	}
	return info, z, nil
}

type coxFit struct {
	beta, se, loglik []float64
	iter             int
}

// coxGroup is a run of equal times in the sorted problem: rows
// [start, start+nd) are its events, [start+nd, end) its censored rows.
type coxGroup struct {
	start, nd, end int32
}

// coxData is the sorted, centred problem and the buffers of its passes
// (allocated once, reused by every evaluation).
type coxData struct {
	n, p int
	m    int       // accumulator length: 1 + p + p(p+1)/2 (s0, s1, lower s2)
	x    []float64 // centred, row-major, sorted by time descending, events first in each group
	// groups of equal time, in descending time order
	groups  []coxGroup
	nEvents int
	sumXEv  []float64 // sum of the centred covariates over the events
	// eta holds the linear predictors, or (lattice path, cox_lattice.go)
	// the rows' weights themselves
	eta []float64
	// lat is the covariates' lattice (nil when they are not on one) and
	// mean the covariate means the rows were centred by
	lat  *coxLattice
	mean []float64
	// s accumulates the risk set (s0, s1, lower s2); d the tied events of
	// the current group
	s, d []float64
	// with few groups (coxGroupSumsMax), each group's sums are formed apart
	// (gt: the group's rows, gd: its events; m each), split between
	// workers at the group bounds wb, then scanned in time order
	gt, gd  []float64
	wb      []int // len workers+1, group indices
	workers int
}

// newCoxData sorts the rows by time descending (events first among equal
// times) and centres the covariates. The covariates are rows[i] or, when
// rows is nil, flat[i*p:(i+1)*p].
func newCoxData(time []float64, event []bool, rows [][]float64, flat []float64, p int) *coxData {
	n := len(time)
	row := func(i int) []float64 {
		if rows != nil {
			return rows[i][:p]
		}
		return flat[i*p : (i+1)*p]
	}
	m := 1 + p + p*(p+1)/2
	cd := &coxData{n: n, p: p, m: m, sumXEv: make([]float64, p), s: make([]float64, m), d: make([]float64, m)}
	// the means (in row order) beside the sort
	mean := make([]float64, p)
	meanDone := make(chan struct{})
	go func() {
		defer close(meanDone)
		ls := newLatticeScan(p)
		for i := 0; i < n; i++ {
			ls.add(row(i), mean)
		}
		for j := range mean {
			mean[j] /= float64(n)
		}
		cd.lat = ls.lattice()
	}()
	idx, keys := sortDescending(time, event)
	// the runs of equal keys, events first in each (the sort put them so)
	for k := 0; k < n; {
		e, nd := k, 0
		for e < n && keys[e] == keys[k] {
			if event[idx[e]] {
				nd++
			}
			e++
		}
		cd.groups = append(cd.groups, coxGroup{int32(k), int32(nd), int32(e)})
		cd.nEvents += nd
		k = e
	}
	cd.splitWork()
	// The covariates are scattered to their sorted positions, the rows read
	// in order: independent stores, where a gather would chain its loads.
	pos := keys[:n] // the keys are not needed any more
	for k, i := range idx {
		pos[i] = uint64(k)
	}
	<-meanDone
	cd.mean = mean
	if cd.lat != nil {
		// the rows are kept as lattice indices; x and eta only if an
		// evaluation needs the exact path (ensureX)
		cd.lat.ids = make([]uint16, n*p)
		cd.lat.centre(mean)
	} else {
		cd.x, cd.eta = make([]float64, n*p), make([]float64, n)
	}
	cd.scatter(pos, row, event, mean)
	return cd
}

// sortDescending returns the row order by time descending, ties in row
// order (the order sort.SliceStable with > gives) or, when first is not
// nil, the rows with first[i] before the others and each part in row
// order; and the sorted keys (equal keys are equal times). It is a stable
// LSD radix sort on the order-preserving bit pattern of the times, 16 bits
// a pass, passes where every key has the same digit skipped (integer days
// need two); the four digit histograms are counted in one pass.
func sortDescending(time []float64, first []bool) ([]int32, []uint64) {
	n := len(time)
	small := true // every time an integer in [0, 65536): one pass
	for _, t := range time {
		if !(t >= 0 && t < 1<<16 && t == math.Trunc(t)) {
			small = false
			break
		}
	}
	if small {
		return sortSmallDescending(time, first)
	}
	keys := make([]uint64, n)
	var count [4][1 << 16]int32
	for i, t := range time {
		if t == 0 {
			t = 0 // -0 and +0 are one time
		}
		b := math.Float64bits(t)
		if b>>63 != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		k := ^b // descending
		keys[i] = k
		count[0][k&0xffff]++
		count[1][k>>16&0xffff]++
		count[2][k>>32&0xffff]++
		count[3][k>>48]++
	}
	idx := make([]int32, n)
	if first == nil {
		for i := range idx {
			idx[i] = int32(i)
		}
	} else {
		// the initial order (first rows, then the others) survives among
		// equal keys: every pass is stable
		o := 0
		for i, f := range first {
			if f {
				idx[o] = int32(i)
				o++
			}
		}
		for i, f := range first {
			if !f {
				idx[o] = int32(i)
				o++
			}
		}
		perm := make([]uint64, n)
		for k, i := range idx {
			perm[k] = keys[i]
		}
		keys = perm
	}
	if n == 0 {
		return idx, keys
	}
	var tmpIdx []int32
	var tmpKeys []uint64
	for pass := range 4 {
		shift := uint(16 * pass)
		c := &count[pass]
		if int(c[keys[0]>>shift&0xffff]) == n {
			continue // one digit: the pass would not move anything
		}
		if tmpIdx == nil {
			tmpIdx = make([]int32, n)
			tmpKeys = make([]uint64, n)
		}
		var sum int32
		for d, v := range c {
			c[d] = sum
			sum += v
		}
		for j, k := range keys {
			d := k >> shift & 0xffff
			tmpKeys[c[d]] = k
			tmpIdx[c[d]] = idx[j]
			c[d]++
		}
		keys, tmpKeys = tmpKeys, keys
		idx, tmpIdx = tmpIdx, idx
	}
	return idx, keys
}

// sortSmallDescending is sortDescending for integer times in [0, 65536):
// one stable counting pass on the key 65535 - t.
func sortSmallDescending(time []float64, first []bool) ([]int32, []uint64) {
	n := len(time)
	var count [1 << 16]int32
	for _, t := range time {
		count[0xffff-int(t)]++
	}
	var sum int32
	for d, v := range count {
		count[d] = sum
		sum += v
	}
	idx := make([]int32, n)
	keys := make([]uint64, n)
	place := func(i int) {
		d := 0xffff - int(time[i])
		idx[count[d]] = int32(i)
		keys[count[d]] = uint64(d)
		count[d]++
	}
	if first == nil {
		for i := range n {
			place(i)
		}
		return idx, keys
	}
	for i, f := range first {
		if f {
			place(i)
		}
	}
	for i, f := range first {
		if !f {
			place(i)
		}
	}
	return idx, keys
}

// accumulate adds r (1, x, the lower triangle of x x') to acc.
func accumulate(acc, x []float64, r float64) {
	p := len(x)
	acc[0] += r
	s1 := acc[1 : 1+p : 1+p]
	s2 := acc[1+p:]
	k := 0
	for a, xa := range x {
		ra := r * xa
		s1[a] += ra
		for _, xb := range x[:a+1] {
			s2[k] += ra * xb
			k++
		}
	}
}

// eval returns the log partial likelihood at beta and fills the score u
// and the information imat (p*p). It is two linear passes: the linear
// predictors (and their maximum, the shift that keeps exp finite), then
// one exp per row (none at beta = 0) summed into the risk set, a run of
// tied times at a time, each run's Efron terms in O(p²) (efronTerms). Both
// passes are split between cores when the runs are few (integer times):
// each run's sums are formed apart, then added up in time order, so the
// result does not depend on the number of cores.
func (cd *coxData) eval(beta []float64, ties Ties, u, imat []float64) float64 {
	p := cd.p
	zero := true
	for _, b := range beta {
		zero = zero && b == 0
	}
	maxEta := 0.0
	direct := false
	if !zero && cd.lat != nil {
		maxEta, direct = cd.lat.fill(beta, cd.mean)
	}
	if !zero && !direct {
		cd.ensureX()
		maxEta = cd.predictors(beta)
	}
	clear(u)
	clear(imat)
	ll := cd.groupTerms(zero, direct, maxEta, ties == TiesEfron, u, imat)
	// the events' own terms: sum of eta - maxEta and of x over the events
	for j, v := range cd.sumXEv {
		ll += beta[j] * v
		u[j] += v
	}
	ll -= float64(cd.nEvents) * maxEta
	for a := 0; a < p; a++ {
		for b := 0; b < a; b++ {
			imat[b*p+a] = imat[a*p+b]
		}
	}
	return ll
}

func coxNewton(time []float64, event []bool, rows [][]float64, x []float64, p int, opts CoxOptions) (coxFit, error) {
	cd := newCoxData(time, event, rows, x, p)
	beta := make([]float64, p)
	u := make([]float64, p)
	imat := make([]float64, p*p)
	ll0 := cd.eval(beta, opts.Ties, u, imat)
	if math.IsNaN(ll0) || math.IsInf(ll0, 0) {
		return coxFit{}, errors.New("log partial likelihood not finite at beta = 0")
	}
	ll := ll0
	newBeta := make([]float64, p)
	step := make([]float64, p)
	u2 := make([]float64, p)
	imat2 := make([]float64, p*p)
	var chol mat.Cholesky
	solve := func() error {
		sym := mat.NewSymDense(p, append([]float64(nil), imat...))
		if !chol.Factorize(sym) {
			return errors.New("information matrix is singular (collinear covariates or no events)")
		}
		var s mat.VecDense
		if err := chol.SolveVecTo(&s, mat.NewVecDense(p, append([]float64(nil), u...))); err != nil {
			return fmt.Errorf("solve: %w", err)
		}
		for j := range step {
			step[j] = s.AtVec(j)
		}
		return nil
	}
	if err := solve(); err != nil {
		return coxFit{}, err
	}
	iter := 0
	converged := false
	for iter < opts.MaxIter {
		iter++
		for j := range newBeta {
			newBeta[j] = beta[j] + step[j]
		}
		// The trial point is evaluated with its score and information (into
		// u2, imat2): an accepted step then needs no second pass.
		newLL := cd.eval(newBeta, opts.Ties, u2, imat2)
		halvings := 0
		for (math.IsNaN(newLL) || newLL < ll) && halvings < 60 {
			// step halving, as coxph does when the likelihood drops
			for j := range newBeta {
				newBeta[j] = (newBeta[j] + beta[j]) / 2
			}
			newLL = cd.eval(newBeta, opts.Ties, u2, imat2)
			halvings++
		}
		rel := math.Abs(1 - ll/newLL)
		if math.IsNaN(newLL) || newLL < ll {
			// no ascent possible: roundoff floor at the optimum
			converged = rel <= 1e-13 || math.Abs(newLL-ll) <= 1e-12*math.Abs(ll)
			break
		}
		copy(beta, newBeta)
		ll = newLL
		u, u2 = u2, u
		imat, imat2 = imat2, imat
		if rel <= opts.Eps {
			converged = true
			break
		}
		if err := solve(); err != nil {
			return coxFit{}, err
		}
	}
	if !converged {
		return coxFit{}, fmt.Errorf("newton-raphson did not converge in %d iterations", opts.MaxIter)
	}
	// u, imat and ll are those of beta (eval's log likelihood does not
	// depend on whether the derivatives are wanted).
	sym := mat.NewSymDense(p, append([]float64(nil), imat...))
	if !chol.Factorize(sym) {
		return coxFit{}, errors.New("information matrix at the estimate is singular")
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		return coxFit{}, fmt.Errorf("invert information: %w", err)
	}
	se := make([]float64, p)
	for j := range se {
		se[j] = math.Sqrt(inv.At(j, j))
	}
	return coxFit{beta: beta, se: se, loglik: []float64{ll0, ll}, iter: iter}, nil
}
