package weibull

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dpsurv/dpsurv/dp"
)

// Noise-aware intervals for the Weibull shape and scale (issue 12).
//
// WeibullIntervals is post-processing: it reads only the release (shape,
// scale, the noisy event count N, epsilon and the public parameters in
// Params) and spends no budget.
//
// LSP+TLL: the interval inverts a test of the shape, run by simulating the
// mechanism (a parametric bootstrap through LSP+TLL). The released shape's
// distribution is wide and skewed (the ladder mechanism sometimes releases
// a shape far from the data's, and the scale follows it), so the simple
// percentile or basic bootstrap from the released fit covers 0.7-0.85 at
// epsilon <= 1; inverting the test does not need a pivot. For a candidate
// shape p:
//   - its nuisance scale lambda(p) is the scale for which a Weibull(p,
//     lambda) sample censored at time_max has E[sum t^q]/E[events] equal to
//     the released tau/delta = scale^q (q the released shape): the scale
//     that explains what TLL released;
//   - n = round(max(N, 1) / F(1)) records, F(1) = 1 - exp(-(1/lambda)^p),
//     so that the expected event count is the released N; events are
//     Binomial(n, F(1)) with times from the Weibull truncated to
//     (0, time_max), on a public time grid (midpoints of time_max/Resolution
//     cells, or the starts of the aggregator's bins), and every other
//     record is censored at time_max (the release says nothing about
//     censoring before time_max, so none is assumed);
//   - Sims such data sets are released again by LSP+TLL exactly as
//     FitWeibullLSP does (normalisation, clamp, ladder, exponential
//     mechanism, TLL with the same epsilon and grids), simulated release
//     r drawing its data from one stream and its mechanism's noise from
//     another, seeded by a hash of the release, p and r; the simulated
//     releases run on up to GOMAXPROCS goroutines and the interval does
//     not depend on their number or timing. The test reads a simulated
//     shape only through its side of the released one, which the data
//     set's coarse counts or its ladder's last rung often settle without
//     the whole ladder (weibullCoarseSide, weibullSimShapeSide: the same
//     side as the whole ladder's draw from the same streams);
//   - p is accepted when the released shape lies between the a/2 and
//     1-a/2 quantiles of the simulated shapes (a = 1 - conf).
//
// The shape interval is the accepted set: each end is found by bisection
// on ln p (weibullInversionSteps steps, in [min(0.01, shape/2), shape] and
// [shape, gamma]) and reported at the last rejected point (conservative);
// an end that is never rejected is 0 or gamma. The scale interval is the
// union, over the evaluated candidates that are accepted or inside the
// shape interval, of the scale's basic bootstrap interval given the shape:
// lambda(p) exp(-[quantiles of ln(lambda~/lambda(p))]) with lambda~ the
// same moment-matched scale computed from TLL run again on each simulated
// data set with the released shape as its exponent (the released tau/delta
// was computed with that exponent; a simulated release's own shape can be
// near 0, where the match is ill-posed), computed (pivots) only for the
// candidates the union reads. Cost: 17 x Sims simulated data sets, at 1 M
// records most of them drawn only as counts of groups of cells, their
// shapes' sides settled from those.
//
// The baselines (laplace, saa): their noise (Laplace of scale
// (sensitivity+grid)/(epsilon/2)) dwarfs the sampling error of the clamped
// estimate they perturb, so the interval is the released value plus or
// minus the noise's (1-conf) two-sided quantile (and two grid steps), clamped
// into the box: it covers the clamped MLE (laplace) or the mean of the
// clamped block MLEs (saa) with probability at least conf; sampling error is
// not added (IntervalMethod says so).
//
// The simulation is seeded from a hash of the released values, so the
// interval is a deterministic function of the release; it plays no part in
// the privacy guarantee, which is why it may use a floating-point sampler.
// Coverage: TestWeibullIntervalCoverage (short) and
// TestWeibullIntervalCoverageFull (full tier).

// DefaultWeibullIntervalSims is the default number of simulated releases
// per candidate shape.
const DefaultWeibullIntervalSims = 39

// DefaultWeibullIntervalResolution is the default number of cells of the
// public time grid of the simulated data sets.
const DefaultWeibullIntervalResolution = 2048

// WeibullIntervalOptions tunes WeibullIntervals.
type WeibullIntervalOptions struct {
	// Sims is the number of simulated releases per candidate shape (LSP
	// only; 0 = DefaultWeibullIntervalSims; at least 2/(1-conf) - 1, 39 at
	// conf 0.95, where the quantiles are the extreme order statistics).
	Sims int
	// Conf is the confidence level (0 = 0.95).
	Conf float64
	// Resolution is the number of cells of time grid of the simulated data
	// (0 = DefaultWeibullIntervalResolution); times are put at the cells'
	// midpoints.
	Resolution int
	// BinWidth, if positive, replaces Resolution: simulated times are put
	// at the starts of bins of this width (data units), as an aggregator's
	// histogram reports them (the aggregator passes its public bin width).
	BinWidth float64
	// Progress, if set, is called after each simulated release with the
	// number done so far (about WeibullIntervalSteps(Sims) in all); it
	// must not block. It is called from the simulation's goroutines, one
	// call at a time.
	Progress func(done int)
}

// WeibullIntervalSteps is about the number of simulated releases behind
// an LSP interval with sims per candidate (for progress reports): 15
// candidate shapes (the point, 2 x (1 + weibullInversionSteps) ends, 2
// interior points).
func WeibullIntervalSteps(sims int) int {
	if sims == 0 {
		sims = DefaultWeibullIntervalSims
	}
	return sims * (3 + 2*(1+weibullInversionSteps))
}

// WeibullInterval holds noise-aware intervals for one Weibull release. The
// scale is in normalised units like WeibullFit.Scale.
type WeibullInterval struct {
	ShapeLower, ShapeUpper float64
	ScaleLower, ScaleUpper float64
	Conf                   float64
	Sims                   int // simulated releases in all (0 for the baselines)
	Method                 string
}

// Interval method descriptions.
const (
	WeibullIntervalLSP = "test inversion by simulating the mechanism: a candidate shape (with the scale that explains the released tau/delta) " +
		"is accepted when the released shape lies between the %.3g and %.3g quantiles of %d releases of LSP+TLL (same epsilon and grids) " +
		"on data simulated from it (n = released event count / F(time_max), censoring only at time_max, time grid %s); " +
		"shape interval = accepted shapes, scale interval = union of the scale's bootstrap intervals over them; seeded by a hash of the release"
	WeibullIntervalBaseline = "noise only: released value +/- the two-sided quantile of the Laplace noise, clamped into the box; " +
		"covers the clamped (block) MLE the mechanism perturbs, sampling error not included (it is far below the noise)"
)

// WeibullIntervals computes noise-aware intervals from a private release.
func WeibullIntervals(fit WeibullFit, opt WeibullIntervalOptions) (WeibullInterval, error) {
	conf := opt.Conf
	if conf == 0 {
		conf = 0.95
	}
	if !(conf > 0 && conf < 1) {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: conf must be in (0, 1), got %v", conf)
	}
	if math.IsInf(fit.Epsilon, 1) || !(fit.Epsilon > 0) {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: not a private release (epsilon %v)", fit.Epsilon)
	}
	p := fit.Params
	cfg := releaseConfig(fit)
	if err := cfg.Validate(); err != nil {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: release params: %w", err)
	}
	alpha := 1 - conf
	switch fit.Method {
	case WeibullMethodLaplace, WeibullMethodSAA:
		b := max(p["blocks"], 1)
		iv := WeibullInterval{Conf: conf, Method: WeibullIntervalBaseline}
		iv.ShapeLower, iv.ShapeUpper = baselineInterval(fit.Shape, cfg.Gamma/b, cfg.Gamma, fit.Epsilon/2, alpha)
		iv.ScaleLower, iv.ScaleUpper = baselineInterval(fit.Scale, cfg.ScaleBound/b, cfg.ScaleBound, fit.Epsilon/2, alpha)
		return iv, nil
	case WeibullMethodLSP:
	default:
		return WeibullInterval{}, fmt.Errorf("weibull intervals: unknown method %q", fit.Method)
	}
	sims := opt.Sims
	if sims == 0 {
		sims = DefaultWeibullIntervalSims
	}
	// the (1 - conf)/2 quantile of sims draws needs sims + 1 >= 2/(1 - conf)
	// (39 at conf 0.95): with fewer, the extreme draw stands for a larger
	// tail and the interval would cover less than it says
	if minSims := int(math.Ceil(2/alpha-1e-9)) - 1; sims < minSims {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: sims must be at least %d at conf %v, got %d", minSims, conf, sims)
	}
	res := opt.Resolution
	if res == 0 {
		res = DefaultWeibullIntervalResolution
	}
	if res < 16 || res > 1<<20 {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: resolution must be in [16, 2^20], got %d", res)
	}
	if opt.BinWidth != 0 && !(opt.BinWidth > 0 && cfg.TimeMax/opt.BinWidth <= 1<<20) {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: bin width must be positive with at most 2^20 bins, got %v", opt.BinWidth)
	}
	grid := fmt.Sprintf("time_max/%d", res)
	if opt.BinWidth > 0 {
		grid = fmt.Sprintf("bin starts every %v", opt.BinWidth)
	}
	iv := WeibullInterval{Conf: conf, Method: fmt.Sprintf(WeibullIntervalLSP, alpha/2, 1-alpha/2, sims, grid)}
	iv.ShapeLower, iv.ShapeUpper, iv.ScaleLower, iv.ScaleUpper = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if !(fit.Shape > 0) || !(fit.Scale > 0) || math.IsInf(fit.Scale, 0) {
		// a degenerate release (shape 0): no model to simulate from
		return iv, nil
	}
	inv := newWeibullInversion(fit, cfg, sims, res, opt.BinWidth, alpha)
	inv.progress = opt.Progress
	if err := inv.run(&iv); err != nil {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: %w", err)
	}
	return iv, nil
}

// weibullInversionSteps is the number of bisection steps for each end of
// the shape interval (on the log scale).
const weibullInversionSteps = 6

// weibullInversion inverts the mechanism's shape test (see WeibullIntervals).
// releaseConfig is the configuration a release's params state (its
// defaults filled in).
func releaseConfig(fit WeibullFit) WeibullConfig {
	p := fit.Params
	return WeibullConfig{
		Epsilon: fit.Epsilon, TimeMax: p["time_max"], Omega: p["omega"], Gamma: p["gamma"],
		Rungs: int(p["rungs"]), Tolerance: p["tolerance"], ScaleBound: p["scale_bound"],
	}.WithDefaults()
}

// newWeibullInversion is the inversion of sims simulated releases around
// fit (configuration cfg) at level alpha, on res grid points (or bins of
// width bw when bw > 0), with the ladder of the simulations cut at
// weibullSimRungs.
func newWeibullInversion(fit WeibullFit, cfg WeibullConfig, sims, res int, bw, alpha float64) *weibullInversion {
	inv := &weibullInversion{
		fit: fit, cfg: cfg, sims: sims, res: res, bw: bw, alpha: alpha, seed: weibullReleaseSeed(fit),
		events: weibullEvents(fit.N), ratio: math.Pow(fit.Scale, fit.Shape),
	}
	inv.simCfg = cfg
	inv.simCfg.Rungs = weibullSimRungs(cfg)
	return inv
}

type weibullInversion struct {
	fit    WeibullFit
	cfg    WeibullConfig
	simCfg WeibullConfig // cfg with the ladder cut at weibullSimRungs
	sims   int
	res    int
	bw     float64
	alpha  float64
	seed   [32]byte
	events float64 // released event count (at least 1)
	ratio  float64 // released tau/delta = scale^shape
	evals  []weibullCandidate
	n      int // simulated releases so far
	// progress is WeibullIntervalOptions.Progress
	progress func(done int)
	// allShapes computes every simulated shape (tests of the early
	// acceptance)
	allShapes bool
	// workers is the number of goroutines of the simulated releases (0:
	// GOMAXPROCS; tests)
	workers int
	// fullLadders computes every simulated shape from its whole ladder
	// (tests of weibullSimShapeSide); sides counts the simulated shapes
	// whose side was settled from rung K alone
	fullLadders bool
	sides       atomic.Int64
	// coarse counts the simulated shapes whose side was settled from
	// their data sets' groups' counts
	coarse atomic.Int64
}

// weibullCandidate is one evaluated shape: its nuisance scale, the
// quantiles of the simulated released shapes, and the quantiles of the
// simulated scale pivot (computed by pivots, for the candidates the scale
// interval reads).
type weibullCandidate struct {
	p, lambda        float64
	qlo, qhi         float64 // released shape
	scaleLo, scaleHi float64 // basic interval for the scale given shape p
	sim              *weibullSim
	// per simulated release: its event count and, once its cells were
	// drawn, TLL's sum of t^q at the released shape (NaN before)
	events, sumPow []float64
}

func (w *weibullInversion) accepted(c weibullCandidate) bool {
	return c.qlo <= w.fit.Shape && w.fit.Shape <= c.qhi
}

// parallel runs task(sim, i) for i = 0..n-1 on up to w.workers goroutines
// (0: GOMAXPROCS), each with its own clone of base, and joins the errors.
func (w *weibullInversion) parallel(n int, base *weibullSim, task func(sim *weibullSim, i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	worker := func(sim *weibullSim) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			errs[i] = task(sim, i)
		}
	}
	workers := w.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	var wg sync.WaitGroup
	for i := 1; i < workers; i++ {
		wg.Add(1)
		go func(sim *weibullSim) {
			defer wg.Done()
			worker(sim)
		}(base.clone())
	}
	worker(base)
	wg.Wait()
	return errors.Join(errs...)
}

// eval simulates sims releases from shape p with its moment-matched scale
// and decides the test (the scale's pivots wait for pivots). Simulated
// release r draws its data from a stream seeded by a hash of the release
// seed, p and r (weibullDrawSeed: the event count and the groups' counts,
// then the cells' counts) and its mechanism's noise from a second one
// (weibullMechSeed: the shape's two draws, then TLL's); the releases run
// on up to GOMAXPROCS goroutines, and the result does not depend on their
// number or order.
func (w *weibullInversion) eval(p float64) (weibullCandidate, error) {
	lambda := weibullMatchScale(p, w.fit.Shape, w.ratio)
	c := weibullCandidate{p: p, lambda: lambda}
	base := newWeibullSim(p, lambda, w.events, w.res, w.bw, w.cfg.TimeMax)
	base.prepare(w.cfg)
	base.coarsePrep(w.simCfg, w.fit.Shape)
	c.sim = base
	c.events = make([]float64, w.sims)
	c.sumPow = make([]float64, w.sims)
	shapes := make([]float64, w.sims) // NaN: not computed (accepted early)
	// The test accepts p when at least k simulated shapes lie on each side
	// of the released one (k = the order of simQuantiles' quantiles); once
	// they do, the rest of the simulated shapes cannot change the decision,
	// so they are not drawn (nor, then, the cells of their data sets,
	// unless the scale's pivot needs them). Which releases skip their
	// shape depends on the goroutines' timing, the decision does not: it
	// is "accepted" as soon as any k below and k above are seen, and
	// otherwise every shape is computed. A shape's side is all the test
	// reads: it is settled from the groups' counts when they put S^K on
	// one side (weibullCoarseSide), else from the cells' data set through
	// rung K (weibullSimShapeSide), else from the whole ladder; each way
	// gives the side of the whole ladder's draw from the same streams
	// (TestWeibullSimSideMatchesLadder, TestWeibullIntervalSidesMatchLadders).
	k := max(int(math.Floor(float64(w.sims+1)*w.alpha/2)), 1)
	var (
		mu           sync.Mutex // below, above, w.n, w.progress
		below, above int
		decided      atomic.Bool
	)
	topMass := weibullSimTopMass(w.simCfg)
	release := func(sim *weibullSim, r int) error {
		seed := weibullDrawSeed(w.seed, p, r)
		dsrc := rand.NewChaCha8(seed)
		e := sim.countsCoarse(dsrc)
		c.events[r], c.sumPow[r] = float64(e), math.NaN()
		shapes[r] = math.NaN()
		if !decided.Load() {
			msrc := rand.NewChaCha8(weibullMechSeed(seed))
			shape := math.NaN()
			if !w.fullLadders {
				if side := weibullCoarseSide(sim, e, w.simCfg, w.fit.Shape); side != 0 {
					fork := *msrc
					// the sampler's level draw (weibullSimShapeSide)
					if u := float64(msrc.Uint64()>>11) * (1.0 / (1 << 53)); u < 1-topMass {
						msrc.Uint64() // the grid point's draw
						shape = math.Inf(side)
						w.coarse.Add(1)
					} else {
						*msrc = fork
					}
				}
			}
			if math.IsNaN(shape) {
				sim.refine(dsrc)
				c.sumPow[r] = sim.sumPowCells(e, w.fit.Shape)
				d := sim.data(e)
				if w.fullLadders {
					shape = weibullLadderSampleFloat(weibullComputeLadderOpt(d, w.simCfg, true), msrc, w.cfg.Epsilon)
				} else {
					var cheap bool
					if shape, cheap = weibullSimShapeSide(d, w.simCfg, msrc, w.fit.Shape); cheap {
						w.sides.Add(1)
					}
				}
			}
			shapes[r] = shape
			mu.Lock()
			if shape <= w.fit.Shape {
				below++
			}
			if shape >= w.fit.Shape {
				above++
			}
			if below >= k && above >= k && !w.allShapes {
				decided.Store(true)
			}
			mu.Unlock()
		}
		mu.Lock()
		w.n++
		if w.progress != nil {
			w.progress(w.n)
		}
		mu.Unlock()
		return nil
	}
	if err := w.parallel(w.sims, base, release); err != nil {
		return c, err
	}
	if decided.Load() {
		// accepted: the kth smallest and kth largest simulated shapes
		// bracket the released one; only the comparisons are read
		c.qlo, c.qhi = w.fit.Shape, w.fit.Shape
	} else {
		c.qlo, c.qhi = simQuantiles(shapes, w.alpha)
	}
	c.scaleLo, c.scaleHi = math.NaN(), math.NaN()
	w.evals = append(w.evals, c)
	return c, nil
}

// pivots computes candidate c's scale interval: the scale's pivot given
// shape p from each simulated release, TLL run again on the simulated data
// with the released shape as its exponent (the exponent the released
// tau/delta was computed with) and the scale that explains it; the cells
// of a data set whose shape's side was settled from its groups' counts
// are drawn now, from where its data stream left off.
func (w *weibullInversion) pivots(c *weibullCandidate) error {
	piv := make([]float64, w.sims)
	q := w.fit.Shape
	err := w.parallel(w.sims, c.sim, func(sim *weibullSim, r int) error {
		seed := weibullDrawSeed(w.seed, c.p, r)
		e, sp := c.events[r], c.sumPow[r]
		if math.IsNaN(sp) {
			dsrc := rand.NewChaCha8(seed)
			ev := sim.countsCoarse(dsrc)
			sim.refine(dsrc)
			sp = sim.sumPowCells(ev, q)
		}
		msrc := rand.NewChaCha8(weibullMechSeed(seed))
		msrc.Uint64() // the shape's two draws
		msrc.Uint64()
		delta, tau, err := weibullTLLSums(msrc, e, sp, q, w.cfg.Epsilon, w.cfg.Omega)
		if err != nil {
			return fmt.Errorf("simulated tll: %w", err)
		}
		ratio := math.Pow(weibullTLLScale(delta, tau, q, w.cfg.Omega), q)
		piv[r] = math.Log(weibullMatchScale(c.p, q, ratio)) - math.Log(c.lambda)
		return nil
	})
	if err != nil {
		return err
	}
	a, b := simQuantiles(piv, w.alpha)
	c.scaleLo, c.scaleHi = c.lambda*math.Exp(-b), c.lambda*math.Exp(-a)
	return nil
}

// bisect halves [lo, hi] geometrically weibullInversionSteps times,
// evaluating the candidate shape at each midpoint: the midpoint becomes lo
// where below holds of it, hi where not.
func (w *weibullInversion) bisect(lo, hi float64, below func(weibullCandidate) bool) (float64, float64, error) {
	for s := 0; s < weibullInversionSteps; s++ {
		mid := math.Sqrt(lo * hi)
		c, err := w.eval(mid)
		if err != nil {
			return lo, hi, err
		}
		if below(c) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi, nil
}

func (w *weibullInversion) run(iv *WeibullInterval) error {
	gamma := w.cfg.Gamma
	pMin := math.Min(0.01, w.fit.Shape/2)
	ph := math.Min(w.fit.Shape, gamma)
	if _, err := w.eval(ph); err != nil {
		return err
	}
	// lower end: the root of q_hi(p) = shape in [pMin, shape]
	lo, hi := pMin, ph
	c, err := w.eval(lo)
	if err != nil {
		return err
	}
	if c.qhi >= w.fit.Shape {
		iv.ShapeLower = 0
	} else {
		if lo, _, err = w.bisect(lo, hi, func(c weibullCandidate) bool { return c.qhi < w.fit.Shape }); err != nil {
			return err
		}
		iv.ShapeLower = lo // the last rejected point: conservative
	}
	// upper end: the root of q_lo(p) = shape in [shape, gamma]
	lo, hi = ph, gamma
	if c, err = w.eval(hi); err != nil {
		return err
	}
	if c.qlo <= w.fit.Shape {
		iv.ShapeUpper = gamma
	} else {
		if _, hi, err = w.bisect(lo, hi, func(c weibullCandidate) bool { return !(c.qlo > w.fit.Shape) }); err != nil {
			return err
		}
		iv.ShapeUpper = hi
	}
	// interior points, so that the scale's union spans the shape interval
	a, b := math.Max(iv.ShapeLower, pMin), iv.ShapeUpper
	for _, f := range []float64{1.0 / 3, 2.0 / 3} {
		if _, err := w.eval(a * math.Pow(b/a, f)); err != nil {
			return err
		}
	}
	// the scale: union over the accepted candidates (and those inside the
	// shape interval) of the scale's basic interval given the shape
	iv.ScaleLower, iv.ScaleUpper = math.Inf(1), 0
	for i := range w.evals {
		c := &w.evals[i]
		if !w.accepted(*c) && !(c.p >= iv.ShapeLower && c.p <= iv.ShapeUpper) {
			continue
		}
		if err := w.pivots(c); err != nil {
			return err
		}
		iv.ScaleLower = math.Min(iv.ScaleLower, c.scaleLo)
		iv.ScaleUpper = math.Max(iv.ScaleUpper, c.scaleHi)
	}
	if iv.ScaleLower > iv.ScaleUpper {
		iv.ScaleLower, iv.ScaleUpper = math.NaN(), math.NaN()
	}
	// The released scale is the accepted candidate at the released shape's
	// own scale; a union that misses it comes from the moment match failing
	// numerically at an extreme release (a shape near gamma with a tiny
	// scale: scale^shape below 1e-20), so the interval is widened to it
	// (conservative: wider, never narrower).
	if !math.IsNaN(iv.ScaleLower) && w.fit.Scale > 0 && !math.IsInf(w.fit.Scale, 0) {
		iv.ScaleLower = math.Min(iv.ScaleLower, w.fit.Scale)
		iv.ScaleUpper = math.Max(iv.ScaleUpper, w.fit.Scale)
	}
	iv.Sims = w.n
	return nil
}

// weibullMatchScale returns the scale lambda for which a Weibull(p, lambda)
// sample censored at 1 has E[sum min(T,1)^q] / E[events] = ratio (TLL's
// tau/delta at the released shape q): the candidate's nuisance scale that
// explains the released scale. E[min(T,1)^q] = int_0^1 S(u^(1/q)) du
// (Simpson, 64 cells); the ratio increases with lambda, so ln lambda is
// bracketed in [-50, 50] (rootBracket, to 100/2^40).
func weibullMatchScale(p, q, ratio float64) float64 {
	const m = weibullMatchNodes
	var lu, eu [m + 1]float64 // p ln(u^(1/q)) at the Simpson nodes, and its exp
	for i := range lu {
		lu[i] = p * weibullMatchLogs[i] / q
		eu[i] = math.Exp(lu[i])
	}
	tllRatio := func(ll float64) float64 {
		h := math.Exp(-p * ll) // H(1) = (1/lambda)^p
		f1 := -math.Expm1(-h)
		if !(f1 > 0) {
			return math.Inf(1)
		}
		s := 0.0
		if x := p * ll; x > -600 && x < 600 {
			// H(u^(1/q)) = u^(p/q) H(1): one exp a node
			for i, v := range eu {
				s += weibullSimpsonWeights[i] * math.Exp(-v*h)
			}
		} else {
			for i, v := range lu {
				s += weibullSimpsonWeights[i] * math.Exp(-math.Exp(v-x))
			}
		}
		return s / (3 * m) / f1
	}
	// the bracket of ln lambda in [-50, 50] to 100/2^40 that bisection
	// (tllRatio(mid) < ratio: up) would give, by rootBracket's Illinois
	// steps (about 8 evaluations instead of 40)
	f := func(x float64) float64 {
		v := tllRatio(x - 50)
		if v < ratio {
			return v - ratio
		}
		if d := v - ratio; d > 0 {
			return d
		}
		return math.SmallestNonzeroFloat64 // equal, or NaN: up, as bisection
	}
	lo, hi := rootBracket(f, 100, 40, f(0), f(100))
	return math.Exp((lo+hi)/2 - 50)
}

// weibullEvents is the simulation's expected event count: the released
// noisy count (published clamped at 0), at least 1; NaN counts as 1.
func weibullEvents(n float64) float64 {
	if !(n >= 1) {
		return 1
	}
	return n
}

// simQuantiles returns the alpha/2 and 1-alpha/2 order statistics of x
// (the (k)th smallest with k = floor((sims+1) a), at least 1).
func simQuantiles(x []float64, alpha float64) (lo, hi float64) {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	k := max(int(math.Floor(float64(n+1)*alpha/2)), 1)
	return s[k-1], s[n-k]
}

// baselineInterval is v +/- the (1-alpha) two-sided quantile of
// dp.LaplaceMechanism's noise at sensitivity sens and budget eps, plus two
// grid steps (the rounding of the value and the discreteness), clamped into
// [0, box].
func baselineInterval(v, sens, box, eps, alpha float64) (lo, hi float64) {
	g := dp.LaplaceGrid(sens / eps)
	b := (sens + g) / eps
	q := b*math.Log(1/alpha) + 2*g
	return min(max(v-q, 0), box), min(max(v+q, 0), box)
}

// weibullReleaseSeed hashes the released values of a Weibull release.
func weibullReleaseSeed(fit WeibullFit) [32]byte {
	h := dp.NewSeedHash()
	h.Float64(fit.Shape, fit.Scale, math.Max(fit.N, 0), fit.Epsilon) // n as published (clamped at 0)
	h.String(fit.Method)
	keys := make([]string, 0, len(fit.Params))
	for k := range fit.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.String(k)
		h.Float64(fit.Params[k])
	}
	return h.Seed()
}

// weibullLadderSampleFloat draws an LSP shape with the distribution of
// WeibullLadder.Sample (a level k with probability proportional to
// count_k exp(-k epsilon/4), then a grid point uniform on the level) by a
// float inverse CDF: O(rungs) per draw, where Sample's exact rejection
// sampler needs about (Gamma/Grid) / sum_k count_k exp(-(k-1) epsilon/4)
// proposals, thousands on a large sample whose rungs are narrow. Only for
// the interval simulation, which plays no part in the guarantee; releases
// use Sample.
func weibullLadderSampleFloat(l WeibullLadder, src *rand.ChaCha8, epsilon float64) float64 {
	probs := l.RungProbabilities(epsilon)
	counts := l.GridCounts()
	u := float64(src.Uint64()>>11) * (1.0 / (1 << 53))
	k := len(probs) - 1
	acc := 0.0
	for j, pj := range probs {
		acc += pj
		if u < acc && counts[j] > 0 {
			k = j
			break
		}
	}
	for counts[k] == 0 && k > 0 { // rounding left u past the last level
		k--
	}
	// level k's grid points: S^k's ends minus S^(k-1)'s (nested), i.e.
	// [lo_k, lo_(k-1) - 1] then [hi_(k-1) + 1, hi_k]
	j := int64(src.Uint64() % counts[k])
	lo, _ := l.gridEnds(k)
	if k > 1 {
		plo, phi := l.gridEnds(k - 1)
		if phi >= plo { // S^(k-1) is not empty
			if left := plo - lo; j >= left {
				return float64(phi+1+(j-left)) * l.Grid
			}
		}
	}
	return float64(lo+j) * l.Grid
}

// weibullSimRungs is the number of ladder rungs the interval simulation
// computes: the rungs whose levels can carry probability. Level k's
// weight is count_k exp(-k epsilon/4) and the first non-empty level (k0,
// at most 2: S^1 holds the MLE's grid point, or is [0, Gamma] when there
// is none) has weight at least exp(-2 epsilon/4), so all the levels above
// k together carry at most gridPoints exp(-(k-2) epsilon/4). Cutting the
// ladder at k = 4 (ln gridPoints + 30)/epsilon + 2 (levels above it merge
// into the last one, of the same or smaller mass) changes the simulated
// shape's distribution by less than 2 e^-30 (2e-13) in total variation; at
// epsilon >= 1 it halves the work or better.
func weibullSimRungs(cfg WeibullConfig) int {
	grid := math.Round(cfg.Gamma/cfg.Tolerance) + 1
	k := math.Ceil(4*(math.Log(grid)+30)/cfg.Epsilon) + 2
	if k >= float64(cfg.Rungs) {
		return cfg.Rungs
	}
	return max(int(k), 1)
}
