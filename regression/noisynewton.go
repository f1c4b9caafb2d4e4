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
// Hessians, each record's contribution clipped to a public norm, with
// lattice discrete Laplace noise, and moves to f - H~^-1 g~. Every release
// is a sum whose replace-one sensitivity is twice the clip, whatever the
// number of intervals a record spans: the noise does not grow with q or
// with n, while the sums grow with n, so at hospital sizes the coefficients
// are nearly as precise as the MLE's. Pure ε-DP (sequential composition of
// the steps' releases; n public, replace-one). Intervals are Wald, with the
// last released Hessian and the known variance of the last score noise
// added (NewtonIntervals).
const MethodNewton Method = "newton"

// NewtonOptions configure MethodNewton; zero values take the defaults.
type NewtonOptions struct {
	// Steps is the number of Newton steps (releases of a score and a
	// Hessian sum); 0 means DefaultNewtonSteps.
	Steps int `json:"steps"`
	// ScoreClip bounds each record's score vector (L2 norm; public):
	// records above it are scaled down to it. 0 means DefaultScoreClip.
	ScoreClip float64 `json:"score_clip"`
	// HessianClip bounds the trace of each record's Hessian (a PSD matrix,
	// so its Frobenius norm too); 0 means DefaultHessianClip.
	HessianClip float64 `json:"hessian_clip"`
	// ScoreShares and HessianShares are each step's shares of epsilon (nil:
	// the defaults); together they sum to 1.
	ScoreShares   []float64 `json:"score_shares"`
	HessianShares []float64 `json:"hessian_shares"`
	// StartHazard is the public start's baseline hazard per interval;
	// 0 means min(0.5, 2/q).
	StartHazard float64 `json:"start_hazard"`
}

// Defaults of NewtonOptions.
const (
	DefaultNewtonSteps = 6
	DefaultScoreClip   = 10.0
	DefaultHessianClip = 10.0
	// maxNewtonStep bounds a step's length (a trust region: the noisy
	// early steps must not throw the iterate far from the public start).
	maxNewtonStep = 5.0
	// newtonEigenFloor times n floors the noisy Hessian's eigenvalues.
	newtonEigenFloor = 1e-3
)

// defaultNewtonShares: most of the budget goes to the last score (its
// noise is what the released coefficients carry); the early steps only
// need to bring the iterate near the optimum. They sum to 1 exactly.
var (
	defaultScoreShares   = []float64{0.03, 0.03, 0.05, 0.07, 0.1, 0.45}
	defaultHessianShares = []float64{0.03, 0.03, 0.05, 0.05, 0.05, 0.06}
)

// IntervalNewton describes the limits of a MethodNewton release.
const IntervalNewton = "wald: f ± z sqrt(diag(H^-1 + H^-1 D H^-1)), H the last released (noisy, eigenvalue-floored) Hessian sum, D the variance of the last released score's lattice Laplace noise: sampling error and the mechanism's noise; hazard_ratio limits are exp(beta limits)"

// NewtonStep is one released step (JSON names as in the fit topic).
type NewtonStep struct {
	At          []float64    `json:"at"`
	Score       []float64    `json:"score"`
	ScoreNoise  LatticeNoise `json:"score_noise"`
	Hessian     []float64    `json:"hessian_upper"`
	HessianNois LatticeNoise `json:"hessian_noise"`
}

func (o NewtonOptions) resolve(q int) (NewtonOptions, error) {
	if o.Steps == 0 {
		o.Steps = DefaultNewtonSteps
	}
	if o.ScoreClip == 0 {
		o.ScoreClip = DefaultScoreClip
	}
	if o.HessianClip == 0 {
		o.HessianClip = DefaultHessianClip
	}
	if o.StartHazard == 0 {
		o.StartHazard = math.Min(0.5, 2/float64(q))
	}
	if o.ScoreShares == nil && o.HessianShares == nil {
		if o.Steps == DefaultNewtonSteps {
			o.ScoreShares, o.HessianShares = defaultScoreShares, defaultHessianShares
		} else {
			// the last score half, the rest spread evenly
			o.ScoreShares = make([]float64, o.Steps)
			o.HessianShares = make([]float64, o.Steps)
			rest := 0.5 / float64(2*o.Steps-1)
			for k := range o.Steps {
				o.ScoreShares[k], o.HessianShares[k] = rest, rest
			}
			o.ScoreShares[o.Steps-1] = 0.5
		}
	}
	switch {
	case o.Steps < 1 || o.Steps > 20:
		return o, fmt.Errorf("newton: steps must be in [1, 20], got %d", o.Steps)
	case !(o.ScoreClip > 0) || math.IsInf(o.ScoreClip, 0) || !(o.HessianClip > 0) || math.IsInf(o.HessianClip, 0):
		return o, fmt.Errorf("newton: clips must be positive and finite, got %v and %v", o.ScoreClip, o.HessianClip)
	case !(o.StartHazard > 0 && o.StartHazard < 1):
		return o, fmt.Errorf("newton: start hazard must be in (0, 1), got %v", o.StartHazard)
	case len(o.ScoreShares) != o.Steps || len(o.HessianShares) != o.Steps:
		return o, fmt.Errorf("newton: %d score and %d hessian shares for %d steps", len(o.ScoreShares), len(o.HessianShares), o.Steps)
	}
	var sum float64
	for k := range o.Steps {
		if !(o.ScoreShares[k] > 0) || !(o.HessianShares[k] > 0) {
			return o, errors.New("newton: every share must be positive")
		}
		sum += o.ScoreShares[k] + o.HessianShares[k]
	}
	if math.Abs(sum-1) > 1e-9 {
		return o, fmt.Errorf("newton: shares sum to %v, want 1", sum)
	}
	return o, nil
}

// clippedSums returns, at f, the sum over records of the score vectors
// (each scaled to norm at most cg) and the upper triangle of the sum of
// the Hessians (each scaled to trace at most ch).
func (m *discreteModel) clippedSums(f []float64, cg, ch float64) (score, hessUpper []float64) {
	e, p, d := m.e, m.p, m.dim()
	st := m.newState()
	m.prepare(st, f[:e])
	beta := f[e:]
	an := make([]float64, m.q) // ||A_s||^2
	for s := 0; s < m.q; s++ {
		an[s] = sqNorm(m.basis[s*e : (s+1)*e])
	}
	gs := make([]float64, m.q) // per interval: sum of clipped score weights
	hs := make([]float64, m.q) // per interval: sum of clipped hessian weights
	gb := make([]float64, p)
	hab := make([]float64, e*p)
	hbb := make([]float64, p*p)
	ga := make([]float64, e) // the record's alpha score
	va := make([]float64, e) // the record's sum_s h_s A_s
	gw := make([]float64, m.q)
	hw := make([]float64, m.q)
	for i := 0; i < m.n; i++ {
		xi := m.x[i*p : (i+1)*p]
		var u float64
		for j, b := range beta {
			u += b * xi[j]
		}
		si := int(m.s[i])
		clear(ga)
		clear(va)
		var gsum, hsum, tr float64
		for s := 0; s < si; s++ {
			l, g, h := m.link.pair(st.a[s]+u, s == si-1 && m.event[i])
			_ = l
			gw[s], hw[s] = g, h
			row := m.basis[s*e : (s+1)*e]
			for j, b := range row {
				ga[j] += g * b
				va[j] += h * b
			}
			gsum += g
			hsum += h
			tr += h * an[s]
		}
		xn := sqNorm(xi)
		gn := math.Sqrt(sqNorm(ga) + gsum*gsum*xn)
		tr += hsum * xn
		cgi, chi := 1.0, 1.0
		if gn > cg {
			cgi = cg / gn
		}
		if tr > ch {
			chi = ch / tr
		}
		for s := 0; s < si; s++ {
			gs[s] += cgi * gw[s]
			hs[s] += chi * hw[s]
		}
		for j, xv := range xi {
			gb[j] += cgi * gsum * xv
		}
		for a := 0; a < e; a++ {
			c := chi * va[a]
			for j, xv := range xi {
				hab[a*p+j] += c * xv
			}
		}
		for a, xa := range xi {
			c := chi * hsum * xa
			for b := 0; b < p; b++ {
				hbb[a*p+b] += c * xi[b]
			}
		}
	}
	score = make([]float64, d)
	full := make([]float64, d*d)
	for s := 0; s < m.q; s++ {
		row := m.basis[s*e : (s+1)*e]
		for a, ra := range row {
			score[a] += gs[s] * ra
			for b, rb := range row {
				full[a*d+b] += hs[s] * ra * rb
			}
		}
	}
	copy(score[e:], gb)
	for a := 0; a < e; a++ {
		for j := 0; j < p; j++ {
			full[a*d+e+j] = hab[a*p+j]
			full[(e+j)*d+a] = hab[a*p+j]
		}
	}
	for a := 0; a < p; a++ {
		for b := 0; b < p; b++ {
			full[(e+a)*d+e+b] = hbb[a*p+b]
		}
	}
	hessUpper = make([]float64, 0, hessianEntries(d))
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			hessUpper = append(hessUpper, full[a*d+b])
		}
	}
	return score, hessUpper
}

// fitNewton runs MethodNewton on the prepared problem (res carries the
// common fields); every draw of src is made here, and once one is drawn no
// error is returned.
func fitNewton(m *discreteModel, opts DiscreteOptions, src dp.Source, res DiscreteResult) (DiscreteResult, error) {
	o, err := opts.Newton.resolve(m.q)
	if err != nil {
		return DiscreteResult{}, err
	}
	d := m.dim()
	eps := opts.Epsilon
	// noises first: every sensitivity is public (the clips)
	scoreNoise := make([]LatticeNoise, o.Steps)
	hessNoise := make([]LatticeNoise, o.Steps)
	for k := range o.Steps {
		if scoreNoise[k], err = OutputNoise(2*o.ScoreClip, d, eps*o.ScoreShares[k]); err != nil {
			return DiscreteResult{}, err
		}
		if hessNoise[k], err = OutputNoise(2*o.HessianClip, hessianEntries(d), eps*o.HessianShares[k]); err != nil {
			return DiscreteResult{}, err
		}
	}
	f := make([]float64, d)
	h0 := o.StartHazard
	switch m.link {
	case LinkCloglog:
		f[0] = math.Log(-math.Log1p(-h0))
	case LinkProbit:
		f[0] = probitQuantile(h0)
	default:
		f[0] = math.Log(h0 / (1 - h0))
	}
	floor := newtonEigenFloor * float64(m.n)
	var last *mat.SymDense
	steps := make([]NewtonStep, 0, o.Steps)
	for k := range o.Steps {
		score, hu := m.clippedSums(f, o.ScoreClip, o.HessianClip)
		g, err := scoreNoise[k].Release(src, score)
		if err != nil {
			return DiscreteResult{}, fmt.Errorf("newton step %d: %w", k+1, err)
		}
		hn, err := hessNoise[k].Release(src, hu)
		if err != nil {
			return DiscreteResult{}, fmt.Errorf("newton step %d: %w", k+1, err)
		}
		steps = append(steps, NewtonStep{At: append([]float64(nil), f...), Score: g, ScoreNoise: scoreNoise[k], Hessian: hn, HessianNois: hessNoise[k]})
		// From here on: post-processing of released values only. The
		// Hessian used is the inverse-variance pool of this step's and the
		// previous step's releases (from the second step on the iterates
		// are close), its eigenvalues floored at the larger of a public
		// per-record floor and twice the noise's spectral scale.
		pooled := hn
		vk := latticeLaplaceVar(hessNoise[k])
		if k > 0 && dist(steps[k-1].At, f) < poolRadius {
			vp := latticeLaplaceVar(hessNoise[k-1])
			wk, wp := vp/(vk+vp), vk/(vk+vp)
			pooled = make([]float64, len(hn))
			for j := range hn {
				pooled[j] = wk*hn[j] + wp*steps[k-1].Hessian[j]
			}
			vk = vk * vp / (vk + vp)
		}
		fl := math.Max(floor, 2*math.Sqrt(vk*float64(d)))
		h, ok := projectPD(upperToSym(pooled, d), fl)
		if !ok {
			break // f stays: a function of released values
		}
		last = h
		var chol mat.Cholesky
		if !chol.Factorize(h) {
			break
		}
		var step mat.VecDense
		if err := chol.SolveVecTo(&step, mat.NewVecDense(d, g)); err != nil {
			break
		}
		norm := mat.Norm(&step, 2)
		scale := 1.0
		if norm > maxNewtonStep {
			scale = maxNewtonStep / norm
		}
		next := make([]float64, d)
		for j := range next {
			next[j] = f[j] - scale*step.AtVec(j)
		}
		if !finite(next) {
			break
		}
		f = next
	}
	res.Alpha, res.Beta = f[:m.e], f[m.e:]
	res.Guarantee = GuaranteePureDP
	res.Newton = &o
	res.NewtonSteps = steps
	res.EpsilonFit, res.EpsilonInterval = eps, 0
	ln := scoreNoise[o.Steps-1]
	res.Noise, res.NoiseScale = &ln, ln.Scale
	if last == nil {
		res.IntervalMethod = "none: no released Hessian was positive definite after the floor"
		return res, nil
	}
	newtonIntervals(&res, last, ln, 0.95)
	return res, nil
}

// poolRadius: a previous step's Hessian is pooled only when it was
// released at a point this close (L2) to the current one.
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

// latticeLaplaceVar is the variance of one coordinate of n's noise.
func latticeLaplaceVar(n LatticeNoise) float64 {
	a := math.Exp(-n.Grid / n.Scale)
	return n.Grid * n.Grid * 2 * a / ((1 - a) * (1 - a))
}

// newtonIntervals sets the Wald limits of every coefficient, the standard
// errors, z tests and hazard (odds) ratios from the last released Hessian
// h and the last score noise (post-processing).
func newtonIntervals(res *DiscreteResult, h *mat.SymDense, noise LatticeNoise, conf float64) {
	d := h.SymmetricDim()
	var inv mat.Dense
	if err := inv.Inverse(h); err != nil {
		res.IntervalMethod = "none: the released Hessian is singular"
		return
	}
	v := latticeLaplaceVar(noise)
	var cov mat.Dense
	cov.Mul(&inv, &inv)
	cov.Scale(v, &cov)
	cov.Add(&cov, &inv)
	z := probitQuantile(1 - (1-conf)/2)
	f := append(append([]float64{}, res.Alpha...), res.Beta...)
	se := make([]float64, d)
	lo := make([]float64, d)
	hi := make([]float64, d)
	for j := range d {
		se[j] = math.Sqrt(math.Max(cov.At(j, j), 0))
		lo[j], hi[j] = f[j]-z*se[j], f[j]+z*se[j]
	}
	e := len(res.Alpha)
	res.AlphaLower, res.AlphaUpper = lo[:e], hi[:e]
	res.BetaLower, res.BetaUpper = lo[e:], hi[e:]
	res.AlphaSE, res.BetaSE = se[:e], se[e:]
	res.BetaZ = make([]float64, d-e)
	res.BetaP = make([]float64, d-e)
	res.HazardRatio = make([]float64, d-e)
	res.HazardRatioLower = make([]float64, d-e)
	res.HazardRatioUpper = make([]float64, d-e)
	for j := range d - e {
		b := res.Beta[j]
		res.BetaZ[j] = b / se[e+j]
		res.BetaP[j] = 2 * normCDF(-math.Abs(res.BetaZ[j]))
		res.HazardRatio[j] = math.Exp(b)
		res.HazardRatioLower[j], res.HazardRatioUpper[j] = math.Exp(lo[e+j]), math.Exp(hi[e+j])
	}
	res.IntervalMethod = IntervalNewton
}
