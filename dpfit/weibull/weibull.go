package weibull

import (
	"cmp"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// DP Weibull fits (paper 002, mechanisms.md section 4).
//
// Times are divided by the public TimeMax and raised to at least
// exp(-Omega); a time beyond TimeMax is administratively censored at the
// horizon (normalised time 1, no event), never an event at TimeMax. LSP draws the shape p from a ladder-shaped exponential mechanism with budget
// epsilon/2; TLL releases the event count and sum t^p with epsilon/4 each and
// returns lambda = (tau/delta)^(1/p). The scale is in normalised time units
// (multiply by TimeMax for data units).
//
// Neighbouring relation: add/remove-one for LSP+TLL (and the Laplace
// baseline); the record count is protected. The paper analyses replace-one,
// but its bounds use only each record's range of contribution to the sums
// (t^p in (0, 1], t^p ln t in [-1/(e p), 0], d ln t in [-omega, 0]) and the
// number of records changed, which an added or removed record respects as a
// replaced one does; with the caps at 0 below, the ladder constraint
// hA_{k+1}(D') >= hA_k(D), hB_{k+1}(D') <= hB_k(D) holds term by term for
// D' = D plus or minus one record too (S_{n-k} over the n-k smallest of D
// only shrinks when a record is added, and the n-k-2 smallest of D minus a
// record sum to at most the n-k smallest of D). TLL's two sums have
// sensitivity 1 under either relation. Tests: TestWeibullBoundsLemma1AddRemove,
// TestWeibullLSPGridWorstCaseRatioAddRemove. Sample-and-aggregate's block
// count is a function of n, so SAA stays replace-one with n public.
//
// Sampling (no float noise): the shape is drawn exactly on the public grid
// {0, Tolerance, ..., Gamma} by WeibullLadder.Sample (exponential mechanism
// over the grid points, exact Bernoulli(exp(-x)) rejection), and TLL's two
// terms and the baselines' parameters go through dp.LaplaceMechanism
// (discrete Laplace on a power-of-two grid, the value rounded to it and the
// sensitivity inflated by one grid step). Params states the grids
// (shape_grid, tll_grid, scale_grid).
//
// Choices this file makes where the paper is silent:
//   - f_U^k uses min(sum t^p ln t + k/(ep), 0) as its numerator. f is always
//     <= 0 (t <= 1), so this is still an upper bound, and a tighter one. With
//     a positive numerator the paper's f_U breaks Lemma 1(b),
//     f_U^{k+1}(D') >= f_U^k(D) (replace a record at t = 1 by one at
//     t = exp(-1/p)); the cap restores it term by term. (In the tests the
//     slack of g_L covers the gap even without the cap, so this is defensive.)
//   - Roots are found by scanning a fixed dyadic grid on [0, gamma] for the
//     first point where the bound difference changes sign and bisecting that
//     cell a fixed number of times. That procedure is monotone in the bound
//     function: if h' >= h pointwise the computed crossing of h' is never to
//     the right of h's. Together with Lemma 1 this gives the ladder
//     constraint S^k(D) within S^{k+1}(D') for the computed (not only the
//     exact) intervals, also for f_L - g_U, which is not monotone in p. Any
//     p with f_U - g_L <= 0 is a valid lower end and any p with
//     f_L - g_U >= 0 a valid upper end, so the bisection keeps those sides;
//     the ends are then rounded outwards to multiples of Tolerance.
//   - Inside a cell, t^(q+delta) is evaluated from moments
//     sum c t^q (ln t)^j delta^j / j!, so each bisection step costs O(J), not
//     O(distinct times); the truncation error is below 1e-17 relative.
//   - The rung-0 point (the MLE) has no length; level 1 is S^1 itself, and
//     the ladder constraint is needed (and tested) for k >= 1 only.
//   - The guarantee holds for the intervals as computed in float64: a sign
//     test of a bound difference within rounding error of zero could in
//     principle order two neighbours' ends the wrong way by one Tolerance
//     step. The tests enumerate neighbours and find the worst ratio well
//     inside exp(epsilon/2).
//   - g_U^k's numerator M + k omega is capped at 0 as well (M'/E' <= 0
//     always): without the cap, where M + k omega > 0 (many events at
//     time_max) an added event at exp(-omega) makes hB_{k+1}(D') exceed
//     hB_k(D) (TestWeibullLadderCapNeeded).
//   - TLL floors delta at 1 and tau at exp(-omega p) (the smallest possible
//     sum for one record) and caps |ln lambda| at 700 (post-processing).

// Weibull method names, as in the fit JSON and the --method flag.
const (
	WeibullMethodLSP     = "lsp"     // LSP for the shape + TLL for the scale
	WeibullMethodLaplace = "laplace" // baseline: Laplace on both MLE parameters
	WeibullMethodSAA     = "saa"     // baseline: sample and aggregate
	WeibullMethodMLE     = "mle"     // non-private (epsilon = +Inf)
)

// Defaults of WeibullConfig (paper 002 section VI-A).
const (
	WeibullDefaultOmega     = 6.0
	WeibullDefaultGamma     = 10.0
	WeibullDefaultRungs     = 500
	WeibullDefaultTolerance = 1e-9
	WeibullDefaultBlockSize = 500
)

const (
	weibullGuaranteePureDP = "pure-dp"
	weibullGuaranteeNone   = "none (non-private)"
	// WeibullNeighbouringAddRemove is the relation of LSP+TLL and the
	// Laplace baseline: the record count is protected.
	WeibullNeighbouringAddRemove = "add/remove-one (the record count is protected)"
	// WeibullNeighbouringReplace is sample-and-aggregate's: its block
	// count floor(n/BlockSize) is a function of n, which is public.
	WeibullNeighbouringReplace = "replace-one (the record count is public)"
	weibullNeighbouringMLE     = "none (non-private)"
)

// WeibullConfig holds the public parameters of a DP Weibull fit. Every field
// is configuration; none may be derived from the data.
type WeibullConfig struct {
	// Epsilon is the total budget of one release (> 0). LSP+TLL spends
	// epsilon/2 on the shape, epsilon/4 on the event count and epsilon/4 on
	// sum t^p; the baselines spend epsilon/2 on each parameter. +Inf selects
	// the non-private MLE in FitWeibull.
	Epsilon float64
	// TimeMax is the public time bound in data units (> 0).
	TimeMax float64
	// Omega sets the lower clamp exp(-Omega) of normalised times (default 6).
	Omega float64
	// Gamma bounds the shape: p in [0, Gamma] (default 10).
	Gamma float64
	// Rungs is K, the number of computed rungs of the ladder (default 500).
	Rungs int
	// Tolerance is the root-finding resolution; interval ends are rounded
	// outwards to multiples of it (default 1e-9).
	Tolerance float64
	// ScaleBound bounds the scale for the baselines: lambda in
	// [0, ScaleBound], normalised units (default Gamma, as in the paper).
	ScaleBound float64
	// BlockSize is the target block size of sample-and-aggregate (default
	// 500 records).
	BlockSize int
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c WeibullConfig) WithDefaults() WeibullConfig {
	c.Omega = cmp.Or(c.Omega, WeibullDefaultOmega)
	c.Gamma = cmp.Or(c.Gamma, WeibullDefaultGamma)
	c.Rungs = cmp.Or(c.Rungs, WeibullDefaultRungs)
	c.Tolerance = cmp.Or(c.Tolerance, WeibullDefaultTolerance)
	c.ScaleBound = cmp.Or(c.ScaleBound, c.Gamma)
	c.BlockSize = cmp.Or(c.BlockSize, WeibullDefaultBlockSize)
	return c
}

// Validate checks the configuration (after defaults). Epsilon may be +Inf.
func (c WeibullConfig) Validate() error {
	finitePos := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	switch {
	case !(c.Epsilon > 0):
		return fmt.Errorf("weibull config: epsilon must be positive, got %v", c.Epsilon)
	case !finitePos(c.TimeMax):
		return fmt.Errorf("weibull config: time_max must be positive and finite, got %v", c.TimeMax)
	case !finitePos(c.Omega):
		return fmt.Errorf("weibull config: omega must be positive and finite, got %v", c.Omega)
	case !finitePos(c.Gamma):
		return fmt.Errorf("weibull config: gamma must be positive and finite, got %v", c.Gamma)
	case c.Omega*c.Gamma > 700:
		// t^p >= exp(-omega gamma) must stay far from float64 underflow.
		return fmt.Errorf("weibull config: omega*gamma must be at most 700, got %v", c.Omega*c.Gamma)
	case c.Rungs < 1 || c.Rungs > 100_000:
		return fmt.Errorf("weibull config: rungs must be in [1, 100000], got %d", c.Rungs)
	case !finitePos(c.Tolerance) || c.Tolerance > c.Gamma/4:
		return fmt.Errorf("weibull config: tolerance must be in (0, gamma/4], got %v", c.Tolerance)
	case c.Gamma/c.Tolerance > 1<<52:
		// the shape grid {0, tolerance, ..., gamma} is indexed exactly
		return fmt.Errorf("weibull config: gamma/tolerance must be at most 2^52, got %v", c.Gamma/c.Tolerance)
	case !finitePos(c.ScaleBound):
		return fmt.Errorf("weibull config: scale bound must be positive and finite, got %v", c.ScaleBound)
	case c.BlockSize < 1:
		return fmt.Errorf("weibull config: block size must be positive, got %d", c.BlockSize)
	}
	return nil
}

func (c WeibullConfig) params() map[string]float64 {
	return map[string]float64{
		"omega":     c.Omega,
		"gamma":     c.Gamma,
		"rungs":     float64(c.Rungs),
		"time_max":  c.TimeMax,
		"tolerance": c.Tolerance,
	}
}

// WeibullFit is one Weibull release: S(t) = exp(-(t/Scale)^Shape) with t in
// normalised units (t / time_max).
type WeibullFit struct {
	Shape, Scale float64
	Method       string
	// Epsilon is the total budget spent (+Inf for the non-private MLE).
	Epsilon      float64
	Guarantee    string // "pure-dp", or "none (non-private)" for the MLE
	Neighbouring string // WeibullNeighbouringAddRemove, or WeibullNeighbouringReplace for SAA
	// N is the noisy event count (LSP+TLL's delta before flooring); the
	// exact count for the MLE; 0 for the baselines, which do not release it.
	N float64
	// Params holds the public parameters: omega, gamma, rungs, time_max,
	// tolerance, plus scale_bound and blocks for the baselines.
	Params map[string]float64
}

// weibullData is the normalised, clamped compressed sample.
type weibullData struct {
	t, lt, count, events []float64 // ascending t in [exp(-omega), 1], lt = ln t in [-omega, 0]
	n, e, sumDLog        float64   // records, events, sum d ln t
	// the interval simulation's data sets only (weibullSim.sampleData):
	// group i holds the simulator's time cell cell[i], and pc caches
	// t^q of every cell at the ladder scan's grid points
	cell []int32
	pc   *weibullPowCache
}

// normaliseWeibull divides times by TimeMax, raises them to exp(-omega)
// (non-positive times go to the lower clamp), censors those beyond 1 at 1
// (administrative censoring at the horizon: their events are not counted)
// and merges groups that become equal.
func normaliseWeibull(c survival.Compressed, cfg WeibullConfig) (weibullData, error) {
	if err := c.Validate(); err != nil {
		return weibullData{}, err
	}
	lo := math.Exp(-cfg.Omega)
	var d weibullData
	for i, raw := range c.Time {
		if c.Count[i] == 0 {
			continue
		}
		t := raw / cfg.TimeMax
		if !(t > lo) { // also catches t <= 0
			t = lo
		}
		ev := c.Events[i]
		if t > 1 {
			// Administrative censoring at the horizon (mechanisms.md
			// section 0): followed beyond TimeMax is (TimeMax, censored),
			// never an event at the horizon.
			t, ev = 1, 0
		}
		if k := len(d.t) - 1; k >= 0 && d.t[k] == t {
			d.count[k] += c.Count[i]
			d.events[k] += ev
		} else {
			d.t = append(d.t, t)
			d.lt = append(d.lt, max(math.Log(t), -cfg.Omega))
			d.count = append(d.count, c.Count[i])
			d.events = append(d.events, ev)
		}
		d.n += c.Count[i]
		d.e += ev
	}
	for i := range d.t {
		d.sumDLog += d.events[i] * d.lt[i]
	}
	return d, nil
}

func (d weibullData) compressed() survival.Compressed {
	return survival.Compressed{Time: d.t, Events: d.events, Count: d.count}
}

// sumPow returns sum count * t^p.
func (d weibullData) sumPow(p float64) float64 {
	s := 0.0
	for i, l := range d.lt {
		s += d.count[i] * math.Exp(p*l)
	}
	return s
}

// FitWeibull dispatches on method (lsp, laplace, saa). With epsilon = +Inf
// it returns the non-private MLE on the normalised, clamped data (method
// "mle", guarantee "none (non-private)", N the exact event count), whatever
// the method.
func FitWeibull(src dp.Source, c survival.Compressed, cfg WeibullConfig, method string) (WeibullFit, error) {
	cfg = cfg.WithDefaults()
	if math.IsInf(cfg.Epsilon, 1) {
		if err := cfg.Validate(); err != nil {
			return WeibullFit{}, fmt.Errorf("weibull mle: %w", err)
		}
		d, err := normaliseWeibull(c, cfg)
		if err != nil {
			return WeibullFit{}, fmt.Errorf("weibull mle: %w", err)
		}
		m, err := survival.FitWeibull(d.compressed())
		if err != nil {
			return WeibullFit{}, fmt.Errorf("weibull mle: %w", err)
		}
		return WeibullFit{
			Shape: m.Shape, Scale: m.Scale, Method: WeibullMethodMLE, Epsilon: cfg.Epsilon,
			Guarantee: weibullGuaranteeNone, Neighbouring: weibullNeighbouringMLE, N: m.Events,
			Params: cfg.params(),
		}, nil
	}
	switch method {
	case WeibullMethodLSP, "":
		return FitWeibullLSP(src, c, cfg)
	case WeibullMethodLaplace:
		return FitWeibullLaplace(src, c, cfg)
	case WeibullMethodSAA:
		return FitWeibullSAA(src, c, cfg)
	}
	return WeibullFit{}, fmt.Errorf("weibull fit: unknown method %q (want lsp, laplace or saa)", method)
}
