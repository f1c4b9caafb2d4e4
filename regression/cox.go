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
	if opts.Covariates != nil && len(opts.Covariates) != p {
		return CoxResult{}, fmt.Errorf("%d covariate names for %d covariates", len(opts.Covariates), p)
	}
	x := make([]float64, 0, n*p)
	if opts.Scaling != nil {
		if err := opts.Scaling.validate(p); err != nil {
			return CoxResult{}, err
		}
		x, _ = opts.Scaling.apply(data.X, p)
	} else {
		for _, row := range data.X {
			x = append(x, row...)
		}
	}
	res := CoxResult{
		Method: "cox", Ties: opts.Ties, Epsilon: Epsilon(math.Inf(1)),
		Guarantee: GuaranteeNone, Neighbouring: NeighbouringNone,
		N: int64(n), Covariates: opts.Covariates,
	}
	kind := opts.Projection.Kind
	if kind == "" {
		kind = ProjectionNone
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
	fit, err := coxNewton(data.Time, data.Event, x, p, opts)
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

// coxData is the sorted, centred problem.
type coxData struct {
	n, p  int
	x     []float64 // centred, sorted by time descending
	event []bool
	// groups of equal time, in descending time order: [start, end)
	groups [][2]int
}

func newCoxData(time []float64, event []bool, x []float64, p int) *coxData {
	n := len(time)
	idx := sortDescending(time)
	cd := &coxData{n: n, p: p, x: make([]float64, n*p), event: make([]bool, n)}
	mean := make([]float64, p)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			mean[j] += x[i*p+j]
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	for k, i := range idx {
		cd.event[k] = event[i]
		for j := 0; j < p; j++ {
			cd.x[k*p+j] = x[i*p+j] - mean[j]
		}
	}
	for k := 0; k < n; {
		e := k + 1
		for e < n && time[idx[e]] == time[idx[k]] {
			e++
		}
		cd.groups = append(cd.groups, [2]int{k, e})
		k = e
	}
	return cd
}

// sortDescending returns the row order by time descending, ties in row
// order (the order sort.SliceStable with > gives): a stable LSD radix sort
// on the order-preserving bit pattern of the times, 16 bits a pass, passes
// where every key has the same digit skipped (integer days need two).
func sortDescending(time []float64) []int {
	n := len(time)
	keys := make([]uint64, n)
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
		keys[i] = ^b // descending
	}
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	tmpIdx := make([]int32, n)
	tmpKeys := make([]uint64, n)
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, k := range keys {
			count[k>>shift&0xffff]++
		}
		if n == 0 || count[keys[0]>>shift&0xffff] == n {
			continue // one digit: the pass would not move anything
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for j, k := range keys {
			d := k >> shift & 0xffff
			tmpKeys[count[d]] = k
			tmpIdx[count[d]] = idx[j]
			count[d]++
		}
		keys, tmpKeys = tmpKeys, keys
		idx, tmpIdx = tmpIdx, idx
	}
	out := make([]int, n)
	for i, j := range idx {
		out[i] = int(j)
	}
	return out
}

// eval returns the log partial likelihood at beta and fills the score u
// and the information imat (p*p) when non-nil.
func (cd *coxData) eval(beta []float64, ties Ties, u, imat []float64) float64 {
	n, p := cd.n, cd.p
	eta := make([]float64, n)
	maxEta := math.Inf(-1)
	for i := 0; i < n; i++ {
		var v float64
		for j := 0; j < p; j++ {
			v += beta[j] * cd.x[i*p+j]
		}
		eta[i] = v
		maxEta = math.Max(maxEta, v)
	}
	want := u != nil
	if want {
		for j := range u {
			u[j] = 0
		}
		for j := range imat {
			imat[j] = 0
		}
	}
	s1 := make([]float64, p)
	s2 := make([]float64, p*p)
	d1 := make([]float64, p)
	d2 := make([]float64, p*p)
	a1 := make([]float64, p)
	var s0, ll float64
	for _, g := range cd.groups {
		var d0 float64
		var nd int
		for j := range d1 {
			d1[j] = 0
		}
		for j := range d2 {
			d2[j] = 0
		}
		for i := g[0]; i < g[1]; i++ {
			r := math.Exp(eta[i] - maxEta)
			xi := cd.x[i*p : (i+1)*p]
			s0 += r
			for a := 0; a < p; a++ {
				s1[a] += r * xi[a]
				if want {
					for b := 0; b <= a; b++ {
						s2[a*p+b] += r * xi[a] * xi[b]
					}
				}
			}
			if cd.event[i] {
				nd++
				d0 += r
				ll += eta[i] - maxEta
				for a := 0; a < p; a++ {
					d1[a] += r * xi[a]
					if want {
						u[a] += xi[a]
						for b := 0; b <= a; b++ {
							d2[a*p+b] += r * xi[a] * xi[b]
						}
					}
				}
			}
		}
		if nd == 0 {
			continue
		}
		// The nd terms log(t0) are summed as the logs of products of up to
		// 8 terms (kept within 1e±150): one log per 8 tied events.
		prod := 1.0
		for k := 0; k < nd; k++ {
			frac := 0.0
			if ties == TiesEfron {
				frac = float64(k) / float64(nd)
			}
			t0 := s0 - frac*d0
			prod *= t0
			if k&7 == 7 || !(prod > 1e-150 && prod < 1e150) {
				ll -= math.Log(prod)
				prod = 1
			}
			if !want {
				continue
			}
			for a := 0; a < p; a++ {
				a1[a] = (s1[a] - frac*d1[a]) / t0
				u[a] -= a1[a]
			}
			for a := 0; a < p; a++ {
				for b := 0; b <= a; b++ {
					imat[a*p+b] += (s2[a*p+b]-frac*d2[a*p+b])/t0 - a1[a]*a1[b]
				}
			}
		}
		if prod != 1 {
			ll -= math.Log(prod)
		}
	}
	if want {
		for a := 0; a < p; a++ {
			for b := 0; b < a; b++ {
				imat[b*p+a] = imat[a*p+b]
			}
		}
	}
	return ll
}

func coxNewton(time []float64, event []bool, x []float64, p int, opts CoxOptions) (coxFit, error) {
	cd := newCoxData(time, event, x, p)
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
