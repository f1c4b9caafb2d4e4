package regression

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsurv/dpsurv/dp"
)

// MethodNewton is noisy Newton on clipped per-record scores (after
// Avella-Medina, Bradshaw & Loh, "Differentially private inference via
// noisy optimization", Ann. Statist. 2023): from a public start, each step
// releases the sum of the records' score vectors and the sum of their
// Hessians, each record's contribution clipped to public norms, with
// lattice discrete Laplace noise, and moves to f - H~^-1 g~. The score and
// the Hessian are released by blocks (baseline alpha, coefficients beta,
// and the alpha-beta cross block of the Hessian), each block clipped to its
// own public norm and noised for its own sensitivity, so that the small,
// well-determined beta block does not carry the noise of the baseline's
// large entries. Every release is a sum whose replace-one L2 sensitivity
// is twice its clip, whatever the number of intervals a record spans: the
// noise does not grow with q or with n, while the sums grow with n, so at
// hospital sizes the coefficients are nearly as precise as the MLE's. Pure
// ε-DP (sequential composition of the steps' releases; n public,
// replace-one). Intervals are Wald, from a replay of the released steps
// that carries every step's score and Hessian noise and the sampling error
// through the moves to the estimate (IntervalNewton, newtonNoiseCov).
const MethodNewton Method = "newton"

// NewtonOptions configure MethodNewton; zero values take the defaults.
type NewtonOptions struct {
	// Steps is the number of Newton steps (releases of a score and a
	// Hessian sum); 0 means DefaultNewtonSteps.
	Steps int `json:"steps"`
	// ScoreClip bounds the L2 norm of each record's baseline (alpha) score
	// and BetaScoreClip that of its beta score (public; records above are
	// scaled down to it). 0 means the defaults.
	ScoreClip     float64 `json:"score_clip"`
	BetaScoreClip float64 `json:"beta_score_clip"`
	// HessianClip bounds the trace of each record's alpha-alpha Hessian
	// block, BetaHessianClip that of its beta-beta block (PSD blocks: the
	// trace bounds the Frobenius norm) and CrossHessianClip the Frobenius
	// norm of its alpha-beta block. 0 means the defaults.
	HessianClip      float64 `json:"hessian_clip"`
	BetaHessianClip  float64 `json:"beta_hessian_clip"`
	CrossHessianClip float64 `json:"cross_hessian_clip"`
	// StepShares are the steps' shares of epsilon (nil: the defaults);
	// they sum to 1. Within a step the share is split between the five
	// releases by newtonSplit (the last step by newtonLastSplit).
	StepShares []float64 `json:"step_shares"`
	// StartHazard is the start's baseline hazard per interval when the
	// released counts (NewtonStart) are unusable; 0 means min(0.5, 2/q).
	StartHazard float64 `json:"start_hazard"`
}

// Defaults of NewtonOptions.
const (
	DefaultNewtonSteps      = 5
	DefaultScoreClip        = 8.0
	DefaultBetaScoreClip    = 4.0
	DefaultHessianClip      = 8.0
	DefaultBetaHessianClip  = 1.5
	DefaultCrossHessianClip = 4.0
	// maxNewtonStep bounds a step's length (a trust region: the noisy
	// early steps must not throw the iterate far from the public start).
	maxNewtonStep = 5.0
)

// newtonStartShare is the share of epsilon spent on the start's counts
// (events and person-periods); the steps share the rest.
const newtonStartShare = 0.02

// Block indices of a step's releases.
const (
	blkScoreA = iota
	blkScoreB
	blkHessAA
	blkHessAB
	blkHessBB
	nBlocks
)

// newtonSplit and newtonLastSplit split a step's share of epsilon between
// its five releases (score alpha, score beta, Hessian alpha-alpha,
// alpha-beta, beta-beta); each sums to 1. The alpha score gets a large
// share: its noise in the weakly determined spline directions, which the
// floor leaves uncorrected, leaks into beta through the cross block (at
// 0.2 the beta intervals under-covered: 0.85 at epsilon 2).
var (
	newtonSplit     = [nBlocks]float64{0.35, 0.25, 0.1, 0.05, 0.25}
	newtonLastSplit = [nBlocks]float64{0.3, 0.5, 0.05, 0.05, 0.1}
)

// defaultStepShares: the early steps only need to bring the iterate near
// the optimum; most of the budget goes to the last two (the last score's
// noise is what the released coefficients carry; the Hessians near the
// optimum are what the intervals use). They sum to 1 exactly. With the
// earlier {0.06, 0.1, 0.16, 0.28, 0.4} and last split {0.35, 0.4, 0.05,
// 0.05, 0.15} the honest beta width (newtonNoiseCov) was 2.05x the Wald
// width at epsilon 1, n = 50,000; with these 1.54x (40 releases, logit).
var defaultStepShares = []float64{0.03, 0.05, 0.08, 0.24, 0.6}

// IntervalNewton describes the limits of a MethodNewton release.
const IntervalNewton = "wald: f ± z sqrt(diag(V + B G B')), replaying the released steps k = 1..K (f_k+1 = f_k - c_k H_k^-1 g_k, H_k the released Hessian sums near f_k pooled by inverse noise variance with eigenvalues floored at sqrt(d) noise units, c_k the trust region's factor): V is the noise the steps leave in f, V_k+1 = L_k V_k L_k' + c_k^2 H_k^-1 (D_k + C_k) H_k^-1, D_k the variance of step k's score noise, C_k that of the step's change by the noise of the floored Hessian (to first order; noise in floored directions does not reach H_k), L_k = I - c_k H_k^-1 G_k the part of f_k's error step k leaves uncorrected, G_k the pooled Hessian in the directions the floor left alone and 0 in the floored ones (not determined by the releases: no contraction assumed); B G B' the sampling error the moves carry, B_k+1 = L_k B_k + c_k H_k^-1, G the last step's G_k; hazard_ratio limits are exp(beta limits)"

// NewtonBlock is one released block: the noisy sum and its noise.
type NewtonBlock struct {
	Value []float64    `json:"value"`
	Noise LatticeNoise `json:"noise"`
}

// NewtonStep is one released step (JSON names as in the fit topic): at the
// public point At (a function of earlier releases), the noisy clipped sums
// of the records' scores (alpha and beta parts) and Hessians (the upper
// triangles of the alpha-alpha and beta-beta blocks, the alpha-beta block
// row-major).
type NewtonStep struct {
	At           []float64   `json:"at"`
	ScoreAlpha   NewtonBlock `json:"score_alpha"`
	ScoreBeta    NewtonBlock `json:"score_beta"`
	HessianAlpha NewtonBlock `json:"hessian_alpha_upper"`
	HessianCross NewtonBlock `json:"hessian_cross"`
	HessianBeta  NewtonBlock `json:"hessian_beta_upper"`
}

func (s *NewtonStep) blocks() [nBlocks]*NewtonBlock {
	return [nBlocks]*NewtonBlock{&s.ScoreAlpha, &s.ScoreBeta, &s.HessianAlpha, &s.HessianCross, &s.HessianBeta}
}

func (o NewtonOptions) resolve(q int) (NewtonOptions, error) {
	if o.Steps == 0 {
		o.Steps = DefaultNewtonSteps
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.ScoreClip, DefaultScoreClip)
	def(&o.BetaScoreClip, DefaultBetaScoreClip)
	def(&o.HessianClip, DefaultHessianClip)
	def(&o.BetaHessianClip, DefaultBetaHessianClip)
	def(&o.CrossHessianClip, DefaultCrossHessianClip)
	if o.StartHazard == 0 {
		o.StartHazard = math.Min(0.5, 2/float64(q))
	}
	if o.StepShares == nil {
		if o.Steps == DefaultNewtonSteps {
			o.StepShares = defaultStepShares
		} else {
			// the last step half, the rest spread evenly
			o.StepShares = make([]float64, o.Steps)
			for k := range o.Steps {
				o.StepShares[k] = 0.5 / float64(max(o.Steps-1, 1))
			}
			o.StepShares[o.Steps-1] = 0.5
			if o.Steps == 1 {
				o.StepShares[0] = 1
			}
		}
	}
	if o.Steps < 1 || o.Steps > 20 {
		return o, fmt.Errorf("newton: steps must be in [1, 20], got %d", o.Steps)
	}
	for _, c := range o.clips() {
		if !(c > 0) || math.IsInf(c, 0) {
			return o, fmt.Errorf("newton: clips must be positive and finite, got %v", o.clips())
		}
	}
	if !(o.StartHazard > 0 && o.StartHazard < 1) {
		return o, fmt.Errorf("newton: start hazard must be in (0, 1), got %v", o.StartHazard)
	}
	if len(o.StepShares) != o.Steps {
		return o, fmt.Errorf("newton: %d step shares for %d steps", len(o.StepShares), o.Steps)
	}
	var sum float64
	for _, s := range o.StepShares {
		if !(s > 0) {
			return o, errors.New("newton: every step share must be positive")
		}
		sum += s
	}
	if math.Abs(sum-1) > 1e-9 {
		return o, fmt.Errorf("newton: step shares sum to %v, want 1", sum)
	}
	return o, nil
}

// clips returns the five blocks' clips (L2 norms of a record's
// contribution), in block order.
func (o NewtonOptions) clips() [nBlocks]float64 {
	return [nBlocks]float64{o.ScoreClip, o.BetaScoreClip, o.HessianClip, o.CrossHessianClip, o.BetaHessianClip}
}

// newtonSums are, at one point, the five clipped sums in block order.
type newtonSums [nBlocks][]float64

// blockDims returns the lengths of the five blocks for e baseline and p
// covariate coefficients.
func blockDims(e, p int) [nBlocks]int {
	return [nBlocks]int{e, p, hessianEntries(e), e * p, hessianEntries(p)}
}

// clippedSums returns, at f, the sums over records of each block of the
// records' score vectors and Hessians, every record's block scaled to its
// clip: the alpha score to L2 norm cl[blkScoreA], the beta score to
// cl[blkScoreB], the alpha-alpha and beta-beta Hessian blocks (PSD) to
// trace cl[blkHessAA] and cl[blkHessBB], the cross block to Frobenius norm
// cl[blkHessAB] and further to the geometric mean of the diagonal blocks'
// factors (which keeps each record's clipped Hessian PSD). Records are
// split between workers as in eval; each record's terms are those of
// recordTerms (the logit product form and the cloglog prefix sums are
// exact rewritings of the per-period sums).
func (m *discreteModel) clippedSums(f []float64, cl [nBlocks]float64) newtonSums {
	e, p := m.e, m.p
	st := m.newState()
	m.prepare(st, f[:e])
	an := make([]float64, m.q) // ||A_s||^2
	for s := 0; s < m.q; s++ {
		an[s] = sqNorm(m.basis[s*e : (s+1)*e])
	}
	var pa []float64 // cloglog: pa[k] = sum_{s<k} exp(a_s) ||A_s||^2
	if m.link == LinkCloglog {
		pa = make([]float64, m.q+1)
		for k := 1; k <= m.q; k++ {
			pa[k] = pa[k-1] + st.ea[k-1]*an[k-1]
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if mx := m.n / 2048; workers > mx {
		workers = mx
	}
	workers = max(workers, 1)
	acs := make([]*clipAccum, workers)
	var wg sync.WaitGroup
	chunk := (m.n + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, m.n)
		ac := m.newClipAccum()
		acs[w] = ac
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt := m.newRecordTerms()
			for i := lo; i < hi; i++ {
				m.recordTerms(i, f[e:], st, an, pa, rt)
				ac.add(m, rt, cl)
			}
		}()
	}
	wg.Wait()
	tot := acs[0]
	for _, ac := range acs[1:] {
		addTo(tot.gs, ac.gs)
		addTo(tot.hs, ac.hs)
		addTo(tot.gw, ac.gw)
		addTo(tot.hw, ac.hw)
		addTo(tot.gb, ac.gb)
		addTo(tot.hab, ac.hab)
		addTo(tot.hbb, ac.hbb)
	}
	if m.link == LinkCloglog {
		// survived intervals: interval s is survived by every record with
		// k_i > s, each contributing exp(a_s) w_i times its clip factor
		var sg, sh float64
		for s := m.q - 1; s >= 0; s-- {
			sg += tot.gw[s+1]
			sh += tot.hw[s+1]
			tot.gs[s] += st.ea[s] * sg
			tot.hs[s] += st.ea[s] * sh
		}
	}
	var out newtonSums
	out[blkScoreA] = make([]float64, e)
	haa := make([]float64, e*e)
	for s := 0; s < m.q; s++ {
		row := m.basis[s*e : (s+1)*e]
		for a, ra := range row {
			out[blkScoreA][a] += tot.gs[s] * ra
			for b := a; b < e; b++ {
				haa[a*e+b] += tot.hs[s] * ra * row[b]
			}
		}
	}
	out[blkScoreB] = tot.gb
	out[blkHessAA] = upperOf(haa, e)
	out[blkHessAB] = tot.hab
	out[blkHessBB] = upperOf(tot.hbb, p)
	return out
}

// recordTerm holds one record's unclipped score and Hessian pieces.
type recordTerm struct {
	xi             []float64
	k              int       // survived intervals 0..k-1, last interval k
	w              float64   // cloglog: exp(beta'x)
	gw, hw         []float64 // logit/probit: per interval 0..k, dloss/dz and d2loss/dz2
	gLast, hLast   float64   // cloglog: the last interval's
	ga, va         []float64 // sum_s g_s A_s and sum_s h_s A_s
	gsum, hsum, tr float64   // sum_s g_s, sum_s h_s, sum_s h_s ||A_s||^2
}

func (m *discreteModel) newRecordTerms() *recordTerm {
	return &recordTerm{gw: make([]float64, m.q), hw: make([]float64, m.q), ga: make([]float64, m.e), va: make([]float64, m.e)}
}

// recordTerms fills rt with record i's score and Hessian pieces at
// (alpha of st, beta).
func (m *discreteModel) recordTerms(i int, beta []float64, st *intervalState, an, pa []float64, rt *recordTerm) {
	e, p := m.e, m.p
	xi := m.x[i*p : (i+1)*p]
	var u float64
	for j, b := range beta {
		u += b * xi[j]
	}
	k := int(m.s[i]) - 1
	rt.xi, rt.k = xi, k
	ga, va := rt.ga, rt.va
	clear(ga)
	clear(va)
	rt.gsum, rt.hsum, rt.tr = 0, 0, 0
	last := m.basis[k*e : (k+1)*e]
	switch {
	case m.link == LinkCloglog:
		w := math.Exp(u)
		rt.w = w
		pr := st.p1[k*e : (k+1)*e]
		for j := range ga {
			ga[j] = w * pr[j]
			va[j] = w * pr[j]
		}
		rt.gsum, rt.hsum, rt.tr = w*st.p0[k], w*st.p0[k], w*pa[k]
		_, g, h := m.link.pair(st.a[k]+u, m.event[i])
		rt.gLast, rt.hLast = g, h
		for j, b := range last {
			ga[j] += g * b
			va[j] += h * b
		}
		rt.gsum += g
		rt.hsum += h
		rt.tr += h * an[k]
		return
	case m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit:
		w := math.Exp(u)
		for s := 0; s < k; s++ {
			t := st.ea[s] * w
			r := 1 / (1 + t)
			rt.gw[s], rt.hw[s] = t*r, t*r*r
		}
	default:
		for s := 0; s < k; s++ {
			_, rt.gw[s], rt.hw[s] = m.link.pair(st.a[s]+u, false)
		}
	}
	_, rt.gw[k], rt.hw[k] = m.link.pair(st.a[k]+u, m.event[i])
	for s := 0; s <= k; s++ {
		g, h := rt.gw[s], rt.hw[s]
		row := m.basis[s*e : (s+1)*e]
		for j, b := range row {
			ga[j] += g * b
			va[j] += h * b
		}
		rt.gsum += g
		rt.hsum += h
		rt.tr += h * an[s]
	}
}

// clipAccum is one worker's share of the clipped sums.
type clipAccum struct {
	gs, hs []float64 // per interval: clipped alpha score and Hessian weights
	gw, hw []float64 // cloglog: per k, sum of clipped w_i over records with k_i = k
	gb     []float64 // p
	hab    []float64 // e*p
	hbb    []float64 // p*p (upper triangle used)
}

func (m *discreteModel) newClipAccum() *clipAccum {
	return &clipAccum{
		gs: make([]float64, m.q), hs: make([]float64, m.q),
		gw: make([]float64, m.q+1), hw: make([]float64, m.q+1),
		gb: make([]float64, m.p), hab: make([]float64, m.e*m.p), hbb: make([]float64, m.p*m.p),
	}
}

// recordClips returns the record's five clip factors (see clippedSums).
func recordClips(rt *recordTerm, cl [nBlocks]float64) (ca, cb, caa, cab, cbb float64) {
	xn := sqNorm(rt.xi)
	ca = clipFactor(math.Sqrt(sqNorm(rt.ga)), cl[blkScoreA])
	cb = clipFactor(math.Abs(rt.gsum)*math.Sqrt(xn), cl[blkScoreB])
	caa = clipFactor(rt.tr, cl[blkHessAA])
	cbb = clipFactor(rt.hsum*xn, cl[blkHessBB])
	cab = math.Min(clipFactor(math.Sqrt(sqNorm(rt.va)*xn), cl[blkHessAB]), math.Sqrt(caa*cbb))
	return ca, cb, caa, cab, cbb
}

func (ac *clipAccum) add(m *discreteModel, rt *recordTerm, cl [nBlocks]float64) {
	ca, cb, caa, cab, cbb := recordClips(rt, cl)
	k, xi, p := rt.k, rt.xi, m.p
	if m.link == LinkCloglog {
		ac.gw[k] += ca * rt.w
		ac.hw[k] += caa * rt.w
		ac.gs[k] += ca * rt.gLast
		ac.hs[k] += caa * rt.hLast
	} else {
		for s := 0; s <= k; s++ {
			ac.gs[s] += ca * rt.gw[s]
			ac.hs[s] += caa * rt.hw[s]
		}
	}
	for j, xv := range xi {
		ac.gb[j] += cb * rt.gsum * xv
	}
	for a, v := range rt.va {
		c := cab * v
		for j, xv := range xi {
			ac.hab[a*p+j] += c * xv
		}
	}
	for a, xa := range xi {
		c := cbb * rt.hsum * xa
		for b := a; b < p; b++ {
			ac.hbb[a*p+b] += c * xi[b]
		}
	}
}

// clipFactor is min(1, c/norm).
func clipFactor(norm, c float64) float64 {
	if norm > c {
		return c / norm
	}
	return 1
}

// upperOf returns the upper triangle (row by row) of the d×d row-major a.
func upperOf(a []float64, d int) []float64 {
	out := make([]float64, 0, hessianEntries(d))
	for r := 0; r < d; r++ {
		out = append(out, a[r*d+r:(r+1)*d]...)
	}
	return out
}

// newtonNoises returns step k's five noises (sensitivity twice each
// block's clip: replace-one).
func newtonNoises(o NewtonOptions, e, p int, eps float64) ([][nBlocks]LatticeNoise, error) {
	dims := blockDims(e, p)
	cl := o.clips()
	out := make([][nBlocks]LatticeNoise, o.Steps)
	for k := range o.Steps {
		split := newtonSplit
		if k == o.Steps-1 {
			split = newtonLastSplit
		}
		for b := range nBlocks {
			var err error
			if out[k][b], err = OutputNoise(2*cl[b], dims[b], eps*(1-newtonStartShare)*o.StepShares[k]*split[b]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// pooledHessian is the Hessian of the steps released at points within
// poolRadius of at (by block, weighted by inverse noise variance) and, per
// block, the variance of its pooled noise; ok is false if no step
// qualifies.
func pooledHessian(steps []NewtonStep, at []float64, e, p int) (h *mat.SymDense, vars [nBlocks]float64, ok bool) {
	dims := blockDims(e, p)
	var pooled [nBlocks][]float64
	for b := blkHessAA; b <= blkHessBB; b++ {
		pooled[b] = make([]float64, dims[b])
		var wsum float64
		for k := range steps {
			if dist(steps[k].At, at) > poolRadius {
				continue
			}
			blk := steps[k].blocks()[b]
			w := 1 / latticeLaplaceVar(blk.Noise)
			wsum += w
			for j, v := range blk.Value {
				pooled[b][j] += w * v
			}
		}
		if wsum == 0 {
			return nil, vars, false
		}
		for j := range pooled[b] {
			pooled[b][j] /= wsum
		}
		vars[b] = 1 / wsum
	}
	d := e + p
	h = mat.NewSymDense(d, nil)
	k := 0
	for a := 0; a < e; a++ {
		for c := a; c < e; c++ {
			h.SetSym(a, c, pooled[blkHessAA][k])
			k++
		}
	}
	for a := 0; a < e; a++ {
		for j := 0; j < p; j++ {
			h.SetSym(a, e+j, pooled[blkHessAB][a*p+j])
		}
	}
	k = 0
	for a := 0; a < p; a++ {
		for c := a; c < p; c++ {
			h.SetSym(e+a, e+c, pooled[blkHessBB][k])
			k++
		}
	}
	return h, vars, true
}

// floorNoise floors h's eigenvalues in the metric of its noise: with
// S = diag(s_j), s_j the square root of the noise SD of h's block
// containing (j, j), the noise of S^-1 h S^-1 has entries of SD at most
// about 1 (the cross block's SD is at most max(1, r) times the geometric
// mean of the diagonal blocks'), so its spectral norm is about 2 sqrt(d)
// r; the eigenvalues of S^-1 h S^-1 are floored at twice that.
func floorNoise(h *mat.SymDense, vars [nBlocks]float64, e int, c float64) (*mat.SymDense, bool) {
	d := h.SymmetricDim()
	sa, sb := math.Pow(vars[blkHessAA], 0.25), math.Pow(vars[blkHessBB], 0.25)
	r := math.Max(1, math.Sqrt(vars[blkHessAB])/(sa*sb))
	s := make([]float64, d)
	for j := range s {
		s[j] = sb
		if j < e {
			s[j] = sa
		}
	}
	scaled := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for c := a; c < d; c++ {
			scaled.SetSym(a, c, h.At(a, c)/(s[a]*s[c]))
		}
	}
	fl, ok := projectPD(scaled, c*math.Sqrt(float64(d))*r)
	if !ok {
		return nil, false
	}
	out := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for c := a; c < d; c++ {
			out.SetSym(a, c, fl.At(a, c)*s[a]*s[c])
		}
	}
	return out, true
}

// fitNewton runs MethodNewton on the prepared problem (res carries the
// common fields); every draw of src is made here, and once one is drawn no
// error is returned.
func fitNewton(m *discreteModel, opts DiscreteOptions, src dp.Source, res DiscreteResult) (DiscreteResult, error) {
	o, err := opts.Newton.resolve(m.q)
	if err != nil {
		return DiscreteResult{}, err
	}
	e, d := m.e, m.dim()
	// noises first: every sensitivity is public (the clips)
	noises, err := newtonNoises(o, e, m.p, opts.Epsilon)
	if err != nil {
		return DiscreteResult{}, err
	}
	// the start: the baseline hazard events / person-periods from a
	// release of the two counts (replace-one moves the event count by at
	// most 1 and the person-period count, each record's clamped to q, by at
	// most q - 1), on newtonStartShare of epsilon
	// (two releases, each on half of that share)
	var startNoise [2]LatticeNoise
	for j, sens := range []float64{1, float64(m.q - 1)} {
		if startNoise[j], err = OutputNoise(math.Max(sens, 1), 1, opts.Epsilon*newtonStartShare/2); err != nil {
			return DiscreteResult{}, err
		}
	}
	var events, periods float64
	for i := 0; i < m.n; i++ {
		periods += float64(m.s[i])
		if m.event[i] {
			events++
		}
	}
	counts := make([]float64, 2)
	for j, v := range []float64{events, periods} {
		r, err := startNoise[j].Release(src, []float64{v})
		if err != nil {
			r = []float64{0} // unreachable: the counts are finite
		}
		counts[j] = r[0]
	}
	h0 := o.StartHazard
	if counts[1] >= 1 && counts[0] > 0 {
		h0 = math.Min(math.Max(counts[0]/counts[1], 1e-4), 0.5)
	}
	f := make([]float64, d)
	switch m.link {
	case LinkCloglog:
		f[0] = math.Log(-math.Log1p(-h0))
	case LinkProbit:
		f[0] = probitQuantile(h0)
	default:
		f[0] = math.Log(h0 / (1 - h0))
	}
	res.NewtonStart = []NewtonBlock{{Value: counts[:1], Noise: startNoise[0]}, {Value: counts[1:], Noise: startNoise[1]}}
	cl := o.clips()
	steps := make([]NewtonStep, 0, o.Steps)
	for k := range o.Steps {
		sums := m.clippedSums(f, cl)
		step := NewtonStep{At: append([]float64(nil), f...)}
		for b, blk := range step.blocks() {
			v, err := noises[k][b].Release(src, sums[b])
			if err != nil {
				// unreachable: the sums are finite sums of clipped terms
				v = make([]float64, len(sums[b]))
			}
			*blk = NewtonBlock{Value: v, Noise: noises[k][b]}
		}
		steps = append(steps, step)
		// From here on: post-processing of released values only.
		if next, ok := newtonMove(steps, f, e, m.p); ok {
			f = next
		}
	}
	res.Alpha, res.Beta = f[:e], f[e:]
	res.Guarantee = GuaranteePureDP
	res.Newton = &o
	res.NewtonSteps = steps
	res.EpsilonFit, res.EpsilonInterval = opts.Epsilon, 0
	last := steps[len(steps)-1]
	res.Noise, res.NoiseScale = &last.ScoreBeta.Noise, last.ScoreBeta.Noise.Scale
	newtonIntervals(&res, 0.95)
	return res, nil
}

// newtonMove is the step from f after the last of steps: f - H^-1 g with g
// the last released score and H the pooled, floored Hessian, shortened to
// maxNewtonStep. ok is false (f stays) when no Hessian is usable.
func newtonMove(steps []NewtonStep, f []float64, e, p int) ([]float64, bool) {
	mv, ok := newtonMoveOf(steps, f, e, p)
	if !ok {
		return nil, false
	}
	return mv.next, true
}

// newtonMoveParts is one move of MethodNewton: the next point, the floored
// Hessian H and the unfloored pooled Hessian it came from, and the factor
// the trust region shortened the step by (1: not shortened).
type newtonMoveParts struct {
	next     []float64
	h, raw   *mat.SymDense
	hInv     mat.Dense
	scale    float64
	noiseVar []float64 // diagonal of the variance of the score noise of the step
	hessVar  [nBlocks]float64
	step     []float64 // H^-1 g, before the trust region
}

func newtonMoveOf(steps []NewtonStep, f []float64, e, p int) (newtonMoveParts, bool) {
	d := e + p
	raw, vars, ok := pooledHessian(steps, f, e, p)
	if !ok {
		return newtonMoveParts{}, false
	}
	h, ok := floorNoise(raw, vars, e, 1)
	if !ok {
		return newtonMoveParts{}, false
	}
	var chol mat.Cholesky
	if !chol.Factorize(h) {
		return newtonMoveParts{}, false
	}
	last := steps[len(steps)-1]
	g := append(append([]float64(nil), last.ScoreAlpha.Value...), last.ScoreBeta.Value...)
	var step mat.VecDense
	if err := chol.SolveVecTo(&step, mat.NewVecDense(d, g)); err != nil {
		return newtonMoveParts{}, false
	}
	scale := 1.0
	if norm := mat.Norm(&step, 2); norm > maxNewtonStep {
		scale = maxNewtonStep / norm
	}
	next := make([]float64, d)
	for j := range next {
		next[j] = f[j] - scale*step.AtVec(j)
	}
	if !finite(next) {
		return newtonMoveParts{}, false
	}
	mv := newtonMoveParts{next: next, h: h, raw: raw, scale: scale, noiseVar: scoreNoiseVar(last, e, p), hessVar: vars, step: step.RawVector().Data}
	if err := mv.hInv.Inverse(h); err != nil {
		return newtonMoveParts{}, false
	}
	return mv, true
}

// poolRadius: a step's Hessian is pooled only when it was released at a
// point this close (L2) to the current one.
const poolRadius = 0.25

func dist(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// scoreNoiseVar is the diagonal of the variance of a step's score noise
// (alpha block, then beta).
func scoreNoiseVar(st NewtonStep, e, p int) []float64 {
	dv := make([]float64, e+p)
	for j := range dv {
		if j < e {
			dv[j] = latticeLaplaceVar(st.ScoreAlpha.Noise)
		} else {
			dv[j] = latticeLaplaceVar(st.ScoreBeta.Noise)
		}
	}
	return dv
}

// sandwich returns a diag(dv) a^T.
func sandwich(a *mat.Dense, dv []float64) *mat.Dense {
	var ad, out mat.Dense
	ad.Mul(a, mat.NewDiagDense(len(dv), dv))
	out.Mul(&ad, a.T())
	return &out
}

// latticeLaplaceVar is the variance of one coordinate of n's noise.
func latticeLaplaceVar(n LatticeNoise) float64 {
	a := math.Exp(-n.Grid / n.Scale)
	return n.Grid * n.Grid * 2 * a / ((1 - a) * (1 - a))
}

// newtonIntervals sets the Wald limits of every coefficient, the standard
// errors, z tests and hazard (odds) ratios of a MethodNewton release from
// its released steps (post-processing): H is the pooled, floored Hessian
// at the estimate and D the variances of the last score's noise.
func newtonIntervals(res *DiscreteResult, conf float64) {
	e, p := len(res.Alpha), len(res.Beta)
	d := e + p
	f := append(append([]float64{}, res.Alpha...), res.Beta...)
	steps := res.NewtonSteps
	v, b, g0, ok := newtonNoiseCov(steps, f, e, p)
	if !ok {
		res.IntervalMethod = "none: no released Hessian near the estimate is usable"
		return
	}
	// the noise of every step's released score carried to the estimate
	// (V) and the sampling error the moves carry over, B G0 B'
	cov := mat.NewDense(d, d, nil)
	var t1, t2 mat.Dense
	t1.Mul(b, g0)
	t2.Mul(&t1, b.T())
	cov.Add(v, &t2)
	z := probitQuantile(1 - (1-conf)/2)
	se := make([]float64, d)
	lo := make([]float64, d)
	hi := make([]float64, d)
	for j := range d {
		se[j] = math.Sqrt(math.Max(cov.At(j, j), 0))
		lo[j], hi[j] = f[j]-z*se[j], f[j]+z*se[j]
	}
	res.AlphaLower, res.AlphaUpper = lo[:e], hi[:e]
	res.BetaLower, res.BetaUpper = lo[e:], hi[e:]
	res.AlphaSE, res.BetaSE = se[:e], se[e:]
	res.BetaZ = make([]float64, p)
	res.BetaP = make([]float64, p)
	res.HazardRatio = make([]float64, p)
	res.HazardRatioLower = make([]float64, p)
	res.HazardRatioUpper = make([]float64, p)
	for j := range p {
		b := res.Beta[j]
		res.BetaZ[j] = b / se[e+j]
		res.BetaP[j] = 2 * normCDF(-math.Abs(res.BetaZ[j]))
		res.HazardRatio[j] = math.Exp(b)
		res.HazardRatioLower[j], res.HazardRatioUpper[j] = math.Exp(lo[e+j]), math.Exp(hi[e+j])
	}
	res.IntervalMethod = IntervalNewton
}

// newtonNoiseCov returns the parts of the variance, to first order, of the
// estimate f of a MethodNewton release (post-processing of its released
// steps, replayed): step k moves f_k to f_k+1 = f_k - c_k H_k^-1 (G(f_k) +
// n_k), H_k its floored Hessian, c_k its trust-region factor, G the clipped
// score sum and n_k its noise (variance D_k). With G(f_k) = G0 (f_k - f*)
// near the clipped-score optimum f*, the error e_k = f_k - f* follows
// e_k+1 = L_k e_k - c_k H_k^-1 (n_k + dH_k s_k), L_k = I - c_k H_k^-1 G0,
// dH_k the change of H_k by its noise and s_k = H_k^-1 g_k the step (see
// hessNoiseStepVar): a direction the released Hessians do not determine
// (H_k floored above G0 there) keeps most of its error, and with it the
// noise of every earlier step, not only the last one's. So the noise's
// variance is v = V_K, V_k+1 = L_k V_k L_k' + c_k^2 H_k^-1 (D_k + C_k)
// H_k^-1, V_0 = 0. The moves carry f* - f_true (variance G0^-1, the
// clipping mild) into f as (I - L_K-1 ... L_0) (f* - f_true) = b G0 (f* -
// f_true), b = B_K, B_k+1 = L_k B_k + c_k H_k^-1, B_0 = 0: its variance is
// b G0 b', which needs G0, not its inverse (the directions the releases do
// not determine get a small gain b, not a large G0^-1). G0 is estimated
// from step k's pooled unfloored Hessian R_k: with H_k = R'R, S = R'^-1
// R_k R^-1 has the eigenvalue 1 in the directions the floor left alone
// (H_k = R_k there) and l / t < 1 in the floored ones (l the scaled
// eigenvalue, t the floor), where R_k is mostly noise; those are taken as
// not determined: L_k = I - c_k R^-1 P R, P the projection on the
// eigenvalue-1 directions of S (no contraction assumed where the floor
// acts: clipping l / t to [0, 1] instead kept the noise's positive half
// as contraction, and the weakly determined spline directions' limits
// came out 15% short, alpha coverage 0.89 at epsilon 2); g0 is the last
// step's R' P R. The start's own error in the directions the releases do
// not determine is not in the limits: f_0 is the released constant hazard
// with beta 0, and the baseline's shape away from it is not determined by
// the releases. ok is false when the replay does not reach f.
func newtonNoiseCov(steps []NewtonStep, f []float64, e, p int) (v, b, g0 *mat.Dense, ok bool) {
	d := e + p
	v = mat.NewDense(d, d, nil)
	b = mat.NewDense(d, d, nil)
	cur := steps[0].At
	for k := range steps {
		if dist(steps[k].At, cur) > 1e-9*(1+mat.Norm(mat.NewVecDense(d, cur), 2)) {
			return nil, nil, nil, false
		}
		mv, ok := newtonMoveOf(steps[:k+1], cur, e, p)
		if !ok {
			continue // f stayed: L = I, no noise moved it
		}
		var l *mat.Dense
		l, g0, ok = contraction(mv.h, mv.raw, mv.scale)
		if !ok {
			return nil, nil, nil, false
		}
		var t1, t2, t3 mat.Dense
		t1.Mul(l, v)
		t2.Mul(&t1, l.T())
		v.Copy(&t2)
		nv := sandwich(&mv.hInv, mv.noiseVar)
		nv.Scale(mv.scale*mv.scale, nv)
		v.Add(v, nv)
		// the Hessian's noise E moves the step by -H^-1 E s (s = H^-1 g)
		hc, ok := hessNoiseStepVar(mv.raw, mv.hessVar, e, mv.step)
		if !ok {
			return nil, nil, nil, false
		}
		var hv1, hv2 mat.Dense
		hv1.Mul(&mv.hInv, hc)
		hv2.Mul(&hv1, &mv.hInv)
		hv2.Scale(mv.scale*mv.scale, &hv2)
		v.Add(v, &hv2)
		t3.Mul(l, b)
		b.Copy(&t3)
		var ch mat.Dense
		ch.Scale(mv.scale, &mv.hInv)
		b.Add(b, &ch)
		cur = mv.next
	}
	if g0 == nil || dist(cur, f) > 1e-9*(1+mat.Norm(mat.NewVecDense(d, f), 2)) {
		return nil, nil, nil, false
	}
	return v, b, g0, true
}

// contraction is L = I - c R^-1 P R of newtonNoiseCov and the estimate
// R' P R of G0.
func contraction(h, raw *mat.SymDense, c float64) (*mat.Dense, *mat.Dense, bool) {
	d := h.SymmetricDim()
	var chol mat.Cholesky
	if !chol.Factorize(h) {
		return nil, nil, false
	}
	var r, rInv mat.TriDense
	chol.UTo(&r)
	if err := rInv.InverseTri(&r); err != nil {
		return nil, nil, false
	}
	var t, sd mat.Dense
	t.Mul(rInv.T(), raw)
	sd.Mul(&t, &rInv)
	s := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			s.SetSym(a, b, (sd.At(a, b)+sd.At(b, a))/2)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(s, true) {
		return nil, nil, false
	}
	vals := eig.Values(nil)
	for j, x := range vals {
		// 1: a direction the floor left alone (H_k = R_k there); below
		// 1: a floored one, whose R_k is mostly noise: taken as not
		// determined (no contraction, L = I there)
		if x >= 1-1e-9 {
			vals[j] = 1
		} else {
			vals[j] = 0
		}
	}
	var q mat.Dense
	eig.VectorsTo(&q)
	cs := sandwich(&q, vals)
	var m1, m2 mat.Dense
	m1.Mul(&rInv, cs)
	m2.Mul(&m1, &r)
	l := mat.NewDense(d, d, nil)
	for a := 0; a < d; a++ {
		for b := 0; b < d; b++ {
			id := 0.0
			if a == b {
				id = 1
			}
			l.Set(a, b, id-c*m2.At(a, b))
		}
	}
	var g1, g0 mat.Dense
	g1.Mul(r.T(), cs)
	g0.Mul(&g1, &r)
	return l, &g0, true
}

// hessNoiseStepVar is, to first order, the variance of dH s, s = H^-1 g
// the step, for dH the change the noise E of the pooled Hessian raw makes
// in the floored H = S F(S^-1 raw S^-1) S of floorNoise (c = 1). In the
// scaled metric E's entries have variance 1 (diagonal blocks) and rho^2
// (cross block), independent on the upper triangle; in the eigenbasis Q
// of the scaled raw the rotated entry (i, j) has the variance vt_ij =
// sum_a nu_aa Q_ai^2 Q_aj^2 + sum_a<b nu_ab (Q_ai Q_bj + Q_bi Q_aj)^2 (the
// rotated entries' covariances are neglected). F floors the eigenvalues
// l_i at t, so its derivative is dF = Q (G o Q'EQ) Q' with G_ij = (F(l_i)
// - F(l_j)) / (l_i - l_j): 1 where both are above the floor, 0 where both
// are floored (the noise there does not reach H), between for a mixed
// pair. With u = Q' S s, (G o Q'EQ) u has the variance C~_ii = sum_j
// G_ij^2 vt_ij u_j^2, C~_ik = G_ik^2 vt_ik u_i u_k, and dH s = S Q (G o
// Q'EQ) u.
func hessNoiseStepVar(raw *mat.SymDense, vars [nBlocks]float64, e int, s []float64) (*mat.Dense, bool) {
	d := raw.SymmetricDim()
	sa, sb := math.Pow(vars[blkHessAA], 0.25), math.Pow(vars[blkHessBB], 0.25)
	r := math.Max(1, math.Sqrt(vars[blkHessAB])/(sa*sb))
	sc := make([]float64, d)
	for j := range sc {
		sc[j] = sb
		if j < e {
			sc[j] = sa
		}
	}
	scaled := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for c := a; c < d; c++ {
			scaled.SetSym(a, c, raw.At(a, c)/(sc[a]*sc[c]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(scaled, true) {
		return nil, false
	}
	var q mat.Dense
	eig.VectorsTo(&q)
	l := eig.Values(nil)
	t := math.Sqrt(float64(d)) * r
	fl := func(x float64) float64 { return math.Max(x, t) }
	g := func(i, j int) float64 {
		if l[i] > t && l[j] > t {
			return 1
		}
		if l[i] <= t && l[j] <= t {
			return 0
		}
		return (fl(l[i]) - fl(l[j])) / (l[i] - l[j])
	}
	ss := make([]float64, d)
	for j := range ss {
		ss[j] = sc[j] * s[j]
	}
	var u mat.VecDense
	u.MulVec(q.T(), mat.NewVecDense(d, ss))
	// nu: the variance of the scaled noise's entry (a, b); vt: that of
	// the rotated noise's entry (i, j), the upper triangle's entries
	// independent
	rho2 := vars[blkHessAB] / (sa * sa * sb * sb)
	nu := func(a, b int) float64 {
		if (a < e) != (b < e) {
			return rho2
		}
		return 1
	}
	vt := func(i, j int) float64 {
		var v float64
		for a := 0; a < d; a++ {
			v += nu(a, a) * q.At(a, i) * q.At(a, i) * q.At(a, j) * q.At(a, j)
			for b := a + 1; b < d; b++ {
				w := q.At(a, i)*q.At(b, j) + q.At(b, i)*q.At(a, j)
				v += nu(a, b) * w * w
			}
		}
		return v
	}
	ct := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for k := 0; k < d; k++ {
			if i == k {
				var sum float64
				for j := 0; j < d; j++ {
					sum += g(i, j) * g(i, j) * vt(i, j) * u.AtVec(j) * u.AtVec(j)
				}
				ct.Set(i, i, sum)
			} else {
				ct.Set(i, k, g(i, k)*g(i, k)*vt(i, k)*u.AtVec(i)*u.AtVec(k))
			}
		}
	}
	var sq, t1, out mat.Dense
	sq.Mul(mat.NewDiagDense(d, sc), &q)
	t1.Mul(&sq, ct)
	out.Mul(&t1, sq.T())
	return &out, true
}
