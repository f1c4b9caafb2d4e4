package dpfit

import (
	"errors"
	"fmt"
	"math"
	"slices"

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
	if c.Omega == 0 {
		c.Omega = WeibullDefaultOmega
	}
	if c.Gamma == 0 {
		c.Gamma = WeibullDefaultGamma
	}
	if c.Rungs == 0 {
		c.Rungs = WeibullDefaultRungs
	}
	if c.Tolerance == 0 {
		c.Tolerance = WeibullDefaultTolerance
	}
	if c.ScaleBound == 0 {
		c.ScaleBound = c.Gamma
	}
	if c.BlockSize == 0 {
		c.BlockSize = WeibullDefaultBlockSize
	}
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

// WeibullLadder holds the local-sensitivity intervals S^k = [Lower[k],
// Upper[k]] for k = 0..K+1. S^0 is the MLE point (NaN when the MLE does not
// exist), S^{K+1} = [0, Gamma], and S^{k-1} is contained in S^k for k >= 2.
// The ladder depends on the data but not on epsilon.
//
// The shape is released on the public grid {0, Grid, 2 Grid, ..., Gamma}
// (Grid = the configured Tolerance): rung k is the set of grid points in
// S^k but not in S^{k-1} (k >= 1), each interval end mapped to the nearest
// grid index (a monotone map, so nesting and the ladder property
// S^k(D) within S^{k+1}(D') carry over to the grid sets). The release is
// the exponential mechanism on that finite set with utility -rung and
// weight exp(-rung epsilon/4), sampled exactly (Sample).
type WeibullLadder struct {
	Lower, Upper []float64
	Gamma        float64
	// Grid is the public step of the released shape (WeibullConfig.Tolerance).
	Grid float64
}

// Rungs returns K.
func (l WeibullLadder) Rungs() int { return len(l.Lower) - 2 }

// gridPoints is the number of grid points in [0, Gamma].
func (l WeibullLadder) gridPoints() uint64 {
	return uint64(math.Round(l.Gamma/l.Grid)) + 1
}

// gridEnds returns rung k's interval as grid indices [lo, hi] (lo > hi when
// empty), k >= 1.
func (l WeibullLadder) gridEnds(k int) (lo, hi int64) {
	if k == len(l.Lower)-1 {
		return 0, int64(l.gridPoints()) - 1
	}
	return int64(math.Round(l.Lower[k] / l.Grid)), int64(math.Round(l.Upper[k] / l.Grid))
}

// GridCounts returns, for k = 0..K+1, the number of grid points on level k
// (grid points of S^k not in S^{k-1}; level 0 has none).
func (l WeibullLadder) GridCounts() []uint64 {
	out := make([]uint64, len(l.Lower))
	var prev uint64
	for k := 1; k < len(l.Lower); k++ {
		lo, hi := l.gridEnds(k)
		var n uint64
		if hi >= lo {
			n = uint64(hi - lo + 1)
		}
		out[k] = n - min(prev, n)
		prev = max(prev, n)
	}
	return out
}

// LevelLengths returns, for k = 0..K+1, the measure of level k on the
// grid: its number of grid points times Grid.
func (l WeibullLadder) LevelLengths() []float64 {
	c := l.GridCounts()
	out := make([]float64, len(c))
	for k, n := range c {
		out[k] = float64(n) * l.Grid
	}
	return out
}

// Level returns the rung of p: the smallest k >= 1 with p's grid point in
// S^k, i.e. minus the utility of p. It returns -1 outside [0, Gamma].
func (l WeibullLadder) Level(p float64) int {
	if !(p >= 0 && p <= l.Gamma) {
		return -1
	}
	return l.gridLevel(int64(math.Round(p / l.Grid)))
}

// gridLevel is the rung of grid index i (binary search over the nested
// sets S^1 within S^2 within ... within S^{K+1}).
func (l WeibullLadder) gridLevel(i int64) int {
	lo, hi := 1, len(l.Lower)-1 // S^hi contains i
	for lo < hi {
		mid := (lo + hi) / 2
		a, b := l.gridEnds(mid)
		if i >= a && i <= b {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// LogWeights returns ln(count_k Grid) - k epsilon/4 for k = 0..K+1 (-Inf
// for empty levels), epsilon being the release's total budget (LSP gets
// epsilon/2, and the utility has sensitivity 1).
func (l WeibullLadder) LogWeights(epsilon float64) []float64 {
	lens := l.LevelLengths()
	out := make([]float64, len(lens))
	for k, ln := range lens {
		if ln > 0 {
			out[k] = math.Log(ln) - float64(k)*epsilon/4
		} else {
			out[k] = math.Inf(-1)
		}
	}
	return out
}

// RungProbabilities returns the probability of each level for the given
// total epsilon (float64; for tests and reports — Sample does not use it).
func (l WeibullLadder) RungProbabilities(epsilon float64) []float64 {
	lw := l.LogWeights(epsilon)
	mx := slices.Max(lw)
	out := make([]float64, len(lw))
	tot := 0.0
	for k, v := range lw {
		out[k] = math.Exp(v - mx)
		tot += out[k]
	}
	for k := range out {
		out[k] /= tot
	}
	return out
}

// Sample draws the LSP shape for a release with total budget epsilon (LSP
// spends epsilon/2) exactly: a grid point i uniform on [0, Gamma] is
// accepted with probability exp(-(rung(i) - 1) e) by rung(i) - 1 exact
// Bernoulli(exp(-e)) draws, e = epsilon/4 rounded down to a multiple of
// 2^-30 (less than the stated budget, never more); otherwise it is
// redrawn. The accepted point has probability exactly
// exp(-rung(i) e) / sum_j exp(-rung(j) e): integer arithmetic throughout,
// no float inverse CDF. The expected number of proposals is
// (Gamma/Grid + 1) / sum_k count_k exp(-(k-1) e).
func (l WeibullLadder) Sample(src dp.Source, epsilon float64) (float64, error) {
	i, err := l.sampleGrid(src, epsilon)
	if err != nil {
		return 0, err
	}
	return float64(i) * l.Grid, nil
}

func (l WeibullLadder) sampleGrid(src dp.Source, epsilon float64) (int64, error) {
	if !(l.Grid > 0) || len(l.Lower) < 2 {
		return 0, errors.New("lsp sample: ladder has no grid")
	}
	num, den, err := dp.RationalDown(epsilon / 4)
	if err != nil {
		return 0, fmt.Errorf("lsp sample: %w", err)
	}
	n := l.gridPoints()
	for {
		i := int64(dp.Uint64n(src, n))
		k := l.gridLevel(i)
		ok := true
		for j := 1; j < k && ok; j++ {
			ok = dp.BernoulliExp(src, num, den)
		}
		if ok {
			return i, nil
		}
	}
}

// ComputeWeibullLadder computes the LSP ladder of a sample (times in data
// units; they are normalised with cfg.TimeMax, those beyond it censored at
// it, see normaliseWeibull). cfg.Epsilon is
// not used.
func ComputeWeibullLadder(c survival.Compressed, cfg WeibullConfig) (WeibullLadder, error) {
	cfg = cfg.WithDefaults()
	if cfg.Epsilon == 0 {
		cfg.Epsilon = 1 // not used here
	}
	if err := cfg.Validate(); err != nil {
		return WeibullLadder{}, fmt.Errorf("weibull ladder: %w", err)
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return WeibullLadder{}, fmt.Errorf("weibull ladder: %w", err)
	}
	return weibullComputeLadder(d, cfg), nil
}

// weibullLadderEngine evaluates the bound differences
//
//	hA_k(p) = min(N + k/(ep), 0)/(S + k)  - 1/p - (M - k omega)/(E - k)
//	hB_k(p) = (N - k/(ep))/S_{n-k}        - 1/p - (M + k omega)/(E + k)
//
// with S = sum c t^p, N = sum c t^p ln t, M = sum d ln t, E = sum d and
// S_{n-k} the sum of t^p over the n-k smallest records. A root of
// hA_k is the lower end of rung k, a root of hB_k the upper end.
type weibullLadderEngine struct {
	d       weibullData
	omega   float64
	kmax    int       // rungs 1..kmax are computed (kmax < E)
	cutG    []int     // distinct groups holding the (n-k)th record boundary, ascending
	cutOf   []int     // cutOf[k] = index into cutG
	cutR    []float64 // records of group cutG[cutOf[k]] inside the bottom n-k
	cL, cU  []float64 // (M - k omega)/(E - k), (M + k omega)/(E + k)
	nTerms  int       // Taylor terms J
	cellW   float64   // grid cell width
	cells   map[int]*weibullCell
	scratch []float64
	inv     []float64 // 1/j for the Taylor terms (fast mode only)
}

// weibullCell holds the moments at the left end q of a grid cell:
// mom[j] = sum c t^q lt^j (j = 0..J), pre[g][j] the same over the groups
// below cut group g, grp[g][j] = t_g^q lt_g^j.
type weibullCell struct {
	q        float64
	mom      []float64
	pre, grp [][]float64
}

func newWeibullLadderEngine(d weibullData, cfg WeibullConfig) *weibullLadderEngine {
	e := &weibullLadderEngine{d: d, omega: cfg.Omega, cells: map[int]*weibullCell{}}
	e.kmax = min(cfg.Rungs, int(d.e)-1)
	if e.kmax < 1 {
		e.kmax = 0
		return e
	}
	// Bottom n-k records: walk groups from the top.
	e.cutOf = make([]int, e.kmax+1)
	e.cutR = make([]float64, e.kmax+1)
	g := len(d.count) - 1
	above := 0.0 // records in groups > g
	for k := 1; k <= e.kmax; k++ {
		for above+d.count[g] < float64(k) {
			above += d.count[g]
			g--
		}
		// the top k records take k-above from group g
		r := d.count[g] - (float64(k) - above)
		if len(e.cutG) == 0 || e.cutG[len(e.cutG)-1] != g {
			e.cutG = append(e.cutG, g)
		}
		e.cutOf[k] = len(e.cutG) - 1
		e.cutR[k] = r
	}
	slices.Reverse(e.cutG)
	for k := 1; k <= e.kmax; k++ {
		e.cutOf[k] = len(e.cutG) - 1 - e.cutOf[k]
	}
	e.cL = make([]float64, e.kmax+1)
	e.cU = make([]float64, e.kmax+1)
	for k := 1; k <= e.kmax; k++ {
		fk := float64(k)
		e.cL[k] = (d.sumDLog - fk*cfg.Omega) / (d.e - fk)
		// capped at 0 like f_U's numerator: M'/E' <= 0 always, and the
		// cap makes g_U monotone in k across neighbours (Lemma 1) also
		// where M + k omega > 0 (TestWeibullLadderCapNeeded)
		e.cU[k] = min(d.sumDLog+fk*cfg.Omega, 0) / (d.e + fk)
	}
	return e
}

// sums returns S, N and, per cut group, the prefix sum below it and t_g^p.
func (e *weibullLadderEngine) sums(p float64, pre, grp []float64) (s, nn float64) {
	ci := 0
	for i, l := range e.d.lt {
		w := math.Exp(p * l)
		if ci < len(e.cutG) && e.cutG[ci] == i {
			pre[ci] = s
			grp[ci] = w
			ci++
		}
		cw := e.d.count[i] * w
		s += cw
		nn += cw * l
	}
	return s, nn
}

// sumsStep is sums at the next grid point: pw holds t^p at the previous
// one and is multiplied by step = t^cellW.
func (e *weibullLadderEngine) sumsStep(pw, step, pre, grp []float64) (s, nn float64) {
	ci := 0
	for i, l := range e.d.lt {
		w := pw[i] * step[i]
		pw[i] = w
		if ci < len(e.cutG) && e.cutG[ci] == i {
			pre[ci] = s
			grp[ci] = w
			ci++
		}
		cw := e.d.count[i] * w
		s += cw
		nn += cw * l
	}
	return s, nn
}

func (e *weibullLadderEngine) hA(k int, p, s, nn float64) float64 {
	fk := float64(k)
	num := min(nn+fk/(math.E*p), 0)
	return num/(s+fk) - 1/p - e.cL[k]
}

func (e *weibullLadderEngine) hB(k int, p, nn, sBottom float64) float64 {
	fk := float64(k)
	return (nn-fk/(math.E*p))/sBottom - 1/p - e.cU[k]
}

func (e *weibullLadderEngine) cell(j int) *weibullCell {
	if c, ok := e.cells[j]; ok {
		return c
	}
	J := e.nTerms
	c := &weibullCell{q: float64(j) * e.cellW, mom: make([]float64, J+2)}
	c.pre = make([][]float64, len(e.cutG))
	c.grp = make([][]float64, len(e.cutG))
	ci := 0
	for i, l := range e.d.lt {
		w := math.Exp(c.q * l)
		if ci < len(e.cutG) && e.cutG[ci] == i {
			c.pre[ci] = slices.Clone(c.mom[:J+1])
			g := make([]float64, J+1)
			v := w
			for t := range g {
				g[t] = v
				v *= l
			}
			c.grp[ci] = g
			ci++
		}
		v := e.d.count[i] * w
		for t := range c.mom {
			c.mom[t] += v
			v *= l
		}
	}
	e.cells[j] = c
	return c
}

// taylor fills a[j] = delta^j / j!.
func (e *weibullLadderEngine) taylor(delta float64) []float64 {
	a := e.scratch[:e.nTerms+1]
	a[0] = 1
	if e.inv != nil { // fast (simulation): multiply by 1/j
		for j := 1; j < len(a); j++ {
			a[j] = a[j-1] * delta * e.inv[j]
		}
		return a
	}
	for j := 1; j < len(a); j++ {
		a[j] = a[j-1] * delta / float64(j)
	}
	return a
}

// evalCell returns S, N and S_{n-k} at p = c.q + delta from the moments.
func (e *weibullLadderEngine) evalCell(c *weibullCell, delta float64, k int) (s, nn, sb float64) {
	if e.inv != nil { // fast (simulation): Horner's scheme, no term array
		g := e.cutOf[k]
		r := e.cutR[k]
		pre, grp := c.pre[g], c.grp[g]
		J := e.nTerms
		s, nn, sb = c.mom[J], c.mom[J+1], pre[J]+r*grp[J]
		for j := J - 1; j >= 0; j-- {
			f := delta * e.inv[j+1]
			s = c.mom[j] + s*f
			nn = c.mom[j+1] + nn*f
			sb = pre[j] + r*grp[j] + sb*f
		}
		return s, nn, sb
	}
	a := e.taylor(delta)
	g := e.cutOf[k]
	r := e.cutR[k]
	for j := len(a) - 1; j >= 0; j-- { // small terms first
		s += a[j] * c.mom[j]
		nn += a[j] * c.mom[j+1]
		sb += a[j] * (c.pre[g][j] + r*c.grp[g][j])
	}
	return s, nn, sb
}

func weibullComputeLadder(d weibullData, cfg WeibullConfig) WeibullLadder {
	return weibullComputeLadderOpt(d, cfg, false)
}

// weibullComputeLadderOpt is weibullComputeLadder; with fast (the interval
// simulation only, never a release) the scan over the grid updates each
// t^p by one multiplication per grid step instead of an exp (relative
// rounding drift below 1e-13 over the scan).
func weibullComputeLadderOpt(d weibullData, cfg WeibullConfig, fast bool) WeibullLadder {
	K := cfg.Rungs
	gamma := cfg.Gamma
	lad := WeibullLadder{Lower: make([]float64, K+2), Upper: make([]float64, K+2), Gamma: gamma, Grid: cfg.Tolerance}
	for k := 1; k <= K+1; k++ {
		lad.Lower[k], lad.Upper[k] = 0, gamma
	}
	lad.Lower[0], lad.Upper[0] = math.NaN(), math.NaN()
	// S^0 (the MLE point) carries no grid point, so sampling never reads
	// it: the simulation skips the MLE
	if !fast {
		if mle, err := survival.FitWeibull(d.compressed()); err == nil {
			p := min(mle.Shape, gamma)
			lad.Lower[0], lad.Upper[0] = p, p
		}
	}

	e := newWeibullLadderEngine(d, cfg)
	if e.kmax == 0 {
		return lad
	}
	// Grid: G cells of width gamma/G with omega*width <= 1/4, so t^delta
	// over a cell is a fast-converging series.
	G := 16
	for float64(G) < 4*cfg.Omega*gamma && G < 1<<20 {
		G *= 2
	}
	e.cellW = gamma / float64(G)
	x := cfg.Omega * e.cellW
	term := 1.0
	for e.nTerms = 1; e.nTerms < 60; e.nTerms++ {
		term *= x / float64(e.nTerms)
		if term < 1e-18 {
			break
		}
	}
	e.scratch = make([]float64, e.nTerms+1)
	if fast {
		e.inv = make([]float64, e.nTerms+1)
		for j := 1; j < len(e.inv); j++ {
			e.inv[j] = 1 / float64(j)
		}
	}

	// First grid point (index 1..G) where hA > 0 and where hB >= 0; G+1 = none.
	firstA := make([]int, e.kmax+1)
	firstB := make([]int, e.kmax+1)
	for k := range firstA {
		firstA[k], firstB[k] = G+1, G+1
	}
	pre := make([]float64, len(e.cutG))
	grp := make([]float64, len(e.cutG))
	openA, openB := e.kmax, e.kmax
	var step, pw []float64
	if fast {
		step = make([]float64, len(e.d.lt))
		pw = make([]float64, len(e.d.lt))
		for i, l := range e.d.lt {
			step[i] = math.Exp(e.cellW * l)
			pw[i] = 1
		}
	}
	for j := 1; j <= G && (openA > 0 || openB > 0); j++ {
		p := float64(j) * e.cellW
		var s, nn float64
		if fast {
			s, nn = e.sumsStep(pw, step, pre, grp)
		} else {
			s, nn = e.sums(p, pre, grp)
		}
		for k := 1; k <= e.kmax; k++ {
			if firstA[k] > G && e.hA(k, p, s, nn) > 0 {
				firstA[k] = j
				openA--
			}
			if firstB[k] > G {
				g := e.cutOf[k]
				if e.hB(k, p, nn, pre[g]+e.cutR[k]*grp[g]) >= 0 {
					firstB[k] = j
					openB--
				}
			}
		}
	}

	iters := 0
	for w := e.cellW; w > cfg.Tolerance; w /= 2 {
		iters++
	}
	tol := cfg.Tolerance
	for k := 1; k <= e.kmax; k++ {
		// Lower end: keep lo with hA(lo) <= 0.
		l := gamma
		if j := firstA[k]; j <= G {
			c := e.cell(j - 1)
			lo, hi := 0.0, e.cellW // offsets within the cell
			for it := 0; it < iters; it++ {
				mid := lo + (hi-lo)/2
				s, nn, _ := e.evalCell(c, mid, k)
				if e.hA(k, c.q+mid, s, nn) > 0 {
					hi = mid
				} else {
					lo = mid
				}
			}
			l = math.Floor((c.q+lo)/tol-1) * tol
		}
		// Upper end: keep hi with hB(hi) >= 0.
		u := gamma
		if j := firstB[k]; j <= G {
			c := e.cell(j - 1)
			lo, hi := 0.0, e.cellW
			for it := 0; it < iters; it++ {
				mid := lo + (hi-lo)/2
				_, nn, sb := e.evalCell(c, mid, k)
				if e.hB(k, c.q+mid, nn, sb) >= 0 {
					hi = mid
				} else {
					lo = mid
				}
			}
			u = math.Ceil((c.q+hi)/tol+1) * tol
		}
		lad.Lower[k] = min(max(l, 0), gamma)
		lad.Upper[k] = min(max(u, 0), gamma)
	}
	for k := 2; k <= K; k++ {
		lad.Lower[k] = min(lad.Lower[k], lad.Lower[k-1])
		lad.Upper[k] = max(lad.Upper[k], lad.Upper[k-1])
	}
	return lad
}

// tll releases delta = E + Lap(4/eps) and tau = sum t^p + Lap(4/eps) (each
// with epsilon/4) and returns them with the post-processed scale.
func weibullTLL(src dp.Source, d weibullData, p, epsilon, omega float64) (delta, tau, scale float64, err error) {
	delta, err = dp.LaplaceMechanism(src, d.e, 1, epsilon/4)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("tll event count: %w", err)
	}
	tau, err = dp.LaplaceMechanism(src, d.sumPow(p), 1, epsilon/4)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("tll sum of t^p: %w", err)
	}
	return delta, tau, weibullTLLScale(delta, tau, p, omega), nil
}

// weibullTLLScale is the post-processing lambda = (tau/delta)^(1/p) with
// delta >= 1, tau >= exp(-omega p), p >= 1e-12 and |ln lambda| <= 700.
func weibullTLLScale(delta, tau, p, omega float64) float64 {
	p = max(p, 1e-12)
	delta = max(delta, 1)
	tau = max(tau, math.Exp(-omega*p))
	ll := (math.Log(tau) - math.Log(delta)) / p
	return math.Exp(min(max(ll, -700), 700))
}

func weibullCheckFinite(cfg WeibullConfig, op string) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if math.IsInf(cfg.Epsilon, 1) {
		return fmt.Errorf("%s: epsilon must be finite (use FitWeibull for the non-private fit)", op)
	}
	return nil
}

// FitWeibullLSP releases the Weibull shape by LSP (epsilon/2) and the scale
// by TLL (epsilon/4 + epsilon/4): epsilon-DP under add/remove-one (and so
// 2 epsilon under replace-one).
func FitWeibullLSP(src dp.Source, c survival.Compressed, cfg WeibullConfig) (WeibullFit, error) {
	cfg = cfg.WithDefaults()
	if err := weibullCheckFinite(cfg, "weibull lsp"); err != nil {
		return WeibullFit{}, err
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull lsp: %w", err)
	}
	return weibullFitLSP(src, d, weibullComputeLadder(d, cfg), cfg)
}

func weibullFitLSP(src dp.Source, d weibullData, lad WeibullLadder, cfg WeibullConfig) (WeibullFit, error) {
	p, err := lad.Sample(src, cfg.Epsilon)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull lsp: %w", err)
	}
	delta, _, scale, err := weibullTLL(src, d, p, cfg.Epsilon, cfg.Omega)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull lsp: %w", err)
	}
	params := cfg.params()
	params["shape_grid"] = lad.Grid
	params["tll_grid"] = dp.LaplaceGrid(4 / cfg.Epsilon) // dp.LaplaceMechanism's grid at sensitivity 1, epsilon/4
	return WeibullFit{
		Shape: p, Scale: scale, Method: WeibullMethodLSP, Epsilon: cfg.Epsilon,
		Guarantee: weibullGuaranteePureDP, Neighbouring: WeibullNeighbouringAddRemove,
		N: delta, Params: params,
	}, nil
}

// weibullClampedMLE returns the MLE clamped into [0, gamma] x [0, scaleBound], or
// the midpoints when the MLE does not exist (no events, no finite maximum).
// Any fixed fallback keeps the sensitivity bound.
func weibullClampedMLE(c survival.Compressed, gamma, scaleBound float64) (p, lambda float64) {
	m, err := survival.FitWeibull(c)
	if err != nil || math.IsNaN(m.Shape) || math.IsNaN(m.Scale) {
		return gamma / 2, scaleBound / 2
	}
	return min(max(m.Shape, 0), gamma), min(max(m.Scale, 0), scaleBound)
}

// FitWeibullLaplace is the Laplace baseline: the MLE on the normalised data,
// clamped into [0, gamma] x [0, scale bound], plus Laplace noise with
// sensitivity gamma (resp. scale bound) and epsilon/2 each. Outputs are
// clamped back into the boxes (post-processing).
func FitWeibullLaplace(src dp.Source, c survival.Compressed, cfg WeibullConfig) (WeibullFit, error) {
	cfg = cfg.WithDefaults()
	if err := weibullCheckFinite(cfg, "weibull laplace"); err != nil {
		return WeibullFit{}, err
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull laplace: %w", err)
	}
	p, l := weibullClampedMLE(d.compressed(), cfg.Gamma, cfg.ScaleBound)
	return weibullRelease(src, p, l, cfg.Gamma, cfg.ScaleBound, cfg, WeibullMethodLaplace, 1)
}

func weibullRelease(src dp.Source, p, l, sensP, sensL float64, cfg WeibullConfig, method string, blocks int) (WeibullFit, error) {
	np, err := dp.LaplaceMechanism(src, p, sensP, cfg.Epsilon/2)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull %s shape: %w", method, err)
	}
	nl, err := dp.LaplaceMechanism(src, l, sensL, cfg.Epsilon/2)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull %s scale: %w", method, err)
	}
	params := cfg.params()
	params["scale_bound"] = cfg.ScaleBound
	params["blocks"] = float64(blocks)
	params["shape_grid"] = dp.LaplaceGrid(sensP / (cfg.Epsilon / 2)) // dp.LaplaceMechanism's grids
	params["scale_grid"] = dp.LaplaceGrid(sensL / (cfg.Epsilon / 2))
	return WeibullFit{
		Shape:        min(max(np, 0), cfg.Gamma),
		Scale:        min(max(nl, 0), cfg.ScaleBound),
		Method:       method,
		Epsilon:      cfg.Epsilon,
		Guarantee:    weibullGuaranteePureDP,
		Neighbouring: weibullNeighbouringOf(method),
		Params:       params,
	}, nil
}

// weibullNeighbouringOf is the relation of a baseline release: the Laplace
// baseline's sensitivity (the clamping box) holds for any two data sets, so
// under add/remove-one; SAA's block count depends on n.
func weibullNeighbouringOf(method string) string {
	if method == WeibullMethodSAA {
		return WeibullNeighbouringReplace
	}
	return WeibullNeighbouringAddRemove
}

// weibullSAABlocks is the number of sample-and-aggregate blocks for n records:
// floor(n / blockSize), at least 1. n is equal on replace-one neighbours.
func weibullSAABlocks(n float64, blockSize int) int {
	return max(1, int(n/float64(blockSize)))
}

// FitWeibullSAA is the sample-and-aggregate baseline: the records are
// shuffled with src and dealt into B = max(1, floor(n/BlockSize)) blocks of
// (almost) equal size; each block's MLE is clamped into [0, gamma] x
// [0, scale bound] (midpoints when a block has none); the block means get
// Laplace noise with sensitivity gamma/B (resp. scale bound/B) and epsilon/2
// each. A replaced record changes one block, so one clamped estimate.
func FitWeibullSAA(src dp.Source, c survival.Compressed, cfg WeibullConfig) (WeibullFit, error) {
	cfg = cfg.WithDefaults()
	if err := weibullCheckFinite(cfg, "weibull saa"); err != nil {
		return WeibullFit{}, err
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull saa: %w", err)
	}
	if d.n > 1<<31-1 {
		return WeibullFit{}, fmt.Errorf("weibull saa: %v records is too many", d.n)
	}
	B := weibullSAABlocks(d.n, cfg.BlockSize)
	mp, ml := weibullSAAMeans(src, d, B, cfg)
	return weibullRelease(src, mp, ml, cfg.Gamma/float64(B), cfg.ScaleBound/float64(B), cfg, WeibullMethodSAA, B)
}

// weibullSAAMeans returns the means of the clamped block estimates.
func weibullSAAMeans(src dp.Source, d weibullData, B int, cfg WeibullConfig) (mp, ml float64) {
	n := int(d.n)
	// Record r is (group, event); events first within a group.
	rec := make([]int32, 0, n) // group index*2 + event flag
	for g := range d.t {
		ne := int(d.events[g])
		for i := 0; i < int(d.count[g]); i++ {
			flag := int32(0)
			if i < ne {
				flag = 1
			}
			rec = append(rec, int32(g)*2+flag)
		}
	}
	for i := len(rec) - 1; i > 0; i-- { // Fisher–Yates with the injected source
		j := int(dp.Uint64n(src, uint64(i+1)))
		rec[i], rec[j] = rec[j], rec[i]
	}
	var bc survival.Compressed
	for b := 0; b < B; b++ {
		blk := rec[b*n/B : (b+1)*n/B]
		slices.Sort(blk)
		bc.Time, bc.Events, bc.Count = bc.Time[:0], bc.Events[:0], bc.Count[:0]
		for i, v := range blk {
			g := v / 2
			if i == 0 || blk[i-1]/2 != g {
				bc.Time = append(bc.Time, d.t[g])
				bc.Events = append(bc.Events, 0)
				bc.Count = append(bc.Count, 0)
			}
			bc.Count[len(bc.Count)-1]++
			bc.Events[len(bc.Events)-1] += float64(v & 1)
		}
		p, l := weibullClampedMLE(bc, cfg.Gamma, cfg.ScaleBound)
		mp += p
		ml += l
	}
	return mp / float64(B), ml / float64(B)
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

// WeibullUtilityRow is the median absolute error of one method at one
// epsilon over Reps releases, against the non-private MLE on the same
// normalised, clamped data.
type WeibullUtilityRow struct {
	Epsilon              float64
	Method               string
	MdAEShape, MdAEScale float64
	Reps                 int
}

// WeibullUtilityResult is the output of WeibullUtility.
type WeibullUtilityResult struct {
	// MLEShape and MLEScale are the reference x* (normalised units).
	MLEShape, MLEScale float64
	Rows               []WeibullUtilityRow
}

// ErrWeibullNoReference is returned by WeibullUtility when the sample has no
// finite MLE to compare with.
var ErrWeibullNoReference = errors.New("no finite mle to compare with")

// WeibullUtility measures MdAE (paper 002, eq. 9) of the shape and scale for
// LSP+TLL, the Laplace baseline and sample-and-aggregate, over reps releases
// at each total epsilon (cfg.Epsilon is ignored). The ladder is computed once
// (it does not depend on epsilon). Use a seeded source for reproducible
// tables; the cost is dominated by SAA's shuffles, O(reps * records).
func WeibullUtility(src dp.Source, c survival.Compressed, cfg WeibullConfig, epsilons []float64, reps int) (WeibullUtilityResult, error) {
	cfg = cfg.WithDefaults()
	cfg.Epsilon = 1
	if err := cfg.Validate(); err != nil {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
	}
	if reps < 1 {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: reps must be positive, got %d", reps)
	}
	for _, e := range epsilons {
		if !(e > 0) || math.IsInf(e, 0) {
			return WeibullUtilityResult{}, fmt.Errorf("weibull utility: epsilon must be positive and finite, got %v", e)
		}
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
	}
	ref, err := survival.FitWeibull(d.compressed())
	if err != nil {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w: %w", ErrWeibullNoReference, err)
	}
	lad := weibullComputeLadder(d, cfg)
	res := WeibullUtilityResult{MLEShape: ref.Shape, MLEScale: ref.Scale}
	B := weibullSAABlocks(d.n, cfg.BlockSize)
	pClamp, lClamp := weibullClampedMLE(d.compressed(), cfg.Gamma, cfg.ScaleBound)
	for _, eps := range epsilons {
		ce := cfg
		ce.Epsilon = eps
		for _, method := range []string{WeibullMethodLSP, WeibullMethodLaplace, WeibullMethodSAA} {
			es := make([]float64, reps)
			el := make([]float64, reps)
			for r := 0; r < reps; r++ {
				var f WeibullFit
				var err error
				switch method {
				case WeibullMethodLSP:
					f, err = weibullFitLSP(src, d, lad, ce)
				case WeibullMethodLaplace:
					f, err = weibullRelease(src, pClamp, lClamp, ce.Gamma, ce.ScaleBound, ce, method, 1)
				case WeibullMethodSAA:
					mp, ml := weibullSAAMeans(src, d, B, ce)
					f, err = weibullRelease(src, mp, ml, ce.Gamma/float64(B), ce.ScaleBound/float64(B), ce, method, B)
				}
				if err != nil {
					return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
				}
				es[r] = math.Abs(f.Shape - ref.Shape)
				el[r] = math.Abs(f.Scale - ref.Scale)
			}
			res.Rows = append(res.Rows, WeibullUtilityRow{
				Epsilon: eps, Method: method, MdAEShape: weibullMedian(es), MdAEScale: weibullMedian(el), Reps: reps,
			})
		}
	}
	return res, nil
}

func weibullMedian(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
