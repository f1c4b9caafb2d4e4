package regression

import (
	"errors"
	"fmt"
	"math"

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
const IntervalNewton = "wald: f ± z se, se^2 the diagonal of V + B G B' (beta) or V_a + B H B' (alpha), replaying the released steps k = 1..K (f_k+1 = f_k - c_k H_k^-1 g_k, H_k the released Hessian sums near f_k pooled by inverse noise variance with eigenvalues floored at sqrt(d) noise units, c_k the trust region's factor): V is the noise the steps leave in f, V_k+1 = L_k V_k L_k' + c_k^2 H_k^-1 (D_k + C_k) H_k^-1, D_k the variance of step k's score noise, C_k that of the Hessian's noise (in the directions the floor left alone) acting on the error carried into the step, E[e_k e_k'] = V_k (to first order; V_a, the baseline's: acting on the released step H_k^-1 g_k, an upper bound for the floored shape directions), L_k = I - c_k H_k^-1 G_k the part of f_k's error step k leaves uncorrected, G_k the pooled Hessian in the directions the floor left alone and 0 in the floored ones (not determined by the releases: no contraction assumed); B G B' the sampling error the moves carry, B_k+1 = L_k B_k + c_k H_k^-1, G the last step's G_k, H the last step's floored Hessian (alpha: the floored directions, the baseline's shape, bounded by the floor); hazard_ratio limits are exp(beta limits)"

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

// noiseMetric is h in the metric of its noise: S^-1 h S^-1 with S =
// diag(s_j), s_j the square root of the noise SD of h's block containing
// (j, j) (the first e coordinates are alpha's), with s and r, the cross
// block's SD over the geometric mean of the diagonal blocks' (at least 1).
func noiseMetric(h *mat.SymDense, vars [nBlocks]float64, e int) (scaled *mat.SymDense, s []float64, r float64) {
	d := h.SymmetricDim()
	sa, sb := math.Pow(vars[blkHessAA], 0.25), math.Pow(vars[blkHessBB], 0.25)
	r = math.Max(1, math.Sqrt(vars[blkHessAB])/(sa*sb))
	s = make([]float64, d)
	for j := range s {
		s[j] = sb
		if j < e {
			s[j] = sa
		}
	}
	scaled = mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for c := a; c < d; c++ {
			scaled.SetSym(a, c, h.At(a, c)/(s[a]*s[c]))
		}
	}
	return scaled, s, r
}

// floorNoise floors h's eigenvalues in the metric of its noise: with
// S = diag(s_j), s_j the square root of the noise SD of h's block
// containing (j, j), the noise of S^-1 h S^-1 has entries of SD at most
// about 1 (the cross block's SD is at most max(1, r) times the geometric
// mean of the diagonal blocks'), so its spectral norm is about 2 sqrt(d)
// r; the eigenvalues of S^-1 h S^-1 are floored at twice that.
func floorNoise(h *mat.SymDense, vars [nBlocks]float64, e int, c float64) (*mat.SymDense, bool) {
	d := h.SymmetricDim()
	scaled, s, r := noiseMetric(h, vars, e)
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
	recs := m.newtonCompact()
	for k := range o.Steps {
		sums := recs.clippedSums(f, cl)
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
	mv := newtonMoveParts{next: next, h: h, raw: raw, scale: scale, noiseVar: scoreNoiseVar(last, e, p), hessVar: vars}
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
