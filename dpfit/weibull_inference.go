package dpfit

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// Noise-aware intervals for the Weibull shape and scale (issue 12).
//
// WeibullIntervals is post-processing: it reads only the release (shape,
// scale, the noisy event count N, epsilon and the public parameters in
// Params) and spends no budget.
//
// LSP+TLL: a parametric bootstrap through the mechanism. Each simulated data
// set has n = round(max(N, 1) / F(1)) records, F(1) = 1 - exp(-(1/scale)^shape)
// the released fit's probability of an event before time_max, so that its
// expected event count is the released one; its events are
// Binomial(n, F(1)) with times drawn from the released Weibull truncated to
// (0, time_max) and put at the midpoints of a public grid of
// time_max/Resolution, and every other record is censored at time_max (the
// censoring model: the release says nothing about censoring before
// time_max, so none is assumed). The simulated data set is released again
// by LSP+TLL exactly as FitWeibullLSP does (normalisation, clamp, ladder,
// exponential mechanism, TLL with the same epsilon and grids). The interval
// is the basic (pivotal) bootstrap interval on the log scale: with q_a the
// a-quantile of log(simulated estimate) - log(released estimate), the
// interval for theta is [theta_hat exp(-q_{1-a/2}), theta_hat exp(-q_{a/2})],
// which corrects for the mechanism's bias as well as its spread and keeps
// the ends positive. The shape interval is clamped into [0, gamma].
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

// DefaultWeibullIntervalSims is the default number of simulated releases.
const DefaultWeibullIntervalSims = 39

// DefaultWeibullIntervalResolution is the default number of cells of the
// public time grid of the simulated data sets.
const DefaultWeibullIntervalResolution = 2048

// WeibullIntervalOptions tunes WeibullIntervals.
type WeibullIntervalOptions struct {
	// Sims is the number of simulated releases (LSP only; 0 = default,
	// at least 19).
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
}

// WeibullInterval holds noise-aware intervals for one Weibull release. The
// scale is in normalised units like WeibullFit.Scale.
type WeibullInterval struct {
	ShapeLower, ShapeUpper float64
	ScaleLower, ScaleUpper float64
	Conf                   float64
	Sims                   int // simulated releases (0 for the baselines)
	Method                 string
}

// Interval method descriptions.
const (
	WeibullIntervalLSP = "parametric bootstrap through the mechanism: %d data sets simulated from the released fit " +
		"(n = released event count / F(time_max), censoring only at time_max, event times on a grid of time_max/%d), " +
		"each released again by LSP+TLL with the same epsilon and grids; basic bootstrap interval on the log scale, " +
		"seeded by a hash of the release"
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
	cfg := WeibullConfig{
		Epsilon: fit.Epsilon, TimeMax: p["time_max"], Omega: p["omega"], Gamma: p["gamma"],
		Rungs: int(p["rungs"]), Tolerance: p["tolerance"], ScaleBound: p["scale_bound"],
	}.WithDefaults()
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
	if sims < 19 {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: sims must be at least 19, got %d", sims)
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
	iv := WeibullInterval{Conf: conf, Method: fmt.Sprintf(WeibullIntervalLSP, sims, res)}
	iv.ShapeLower, iv.ShapeUpper, iv.ScaleLower, iv.ScaleUpper = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if !(fit.Shape > 0) || !(fit.Scale > 0) || math.IsInf(fit.Scale, 0) {
		// a degenerate release (shape 0): no model to simulate from
		return iv, nil
	}
	inv := &weibullInversion{
		fit: fit, cfg: cfg, sims: sims, res: res, bw: opt.BinWidth, alpha: alpha, seed: weibullReleaseSeed(fit),
		events: math.Max(fit.N, 1), ratio: math.Pow(fit.Scale, fit.Shape),
	}
	if err := inv.run(&iv); err != nil {
		return WeibullInterval{}, fmt.Errorf("weibull intervals: %w", err)
	}
	return iv, nil
}

// weibullInversionSteps is the number of bisection steps for each end of
// the shape interval (on the log scale).
const weibullInversionSteps = 6

// weibullInversion inverts the mechanism's shape test (see WeibullIntervals).
type weibullInversion struct {
	fit    WeibullFit
	cfg    WeibullConfig
	sims   int
	res    int
	bw     float64
	alpha  float64
	seed   [32]byte
	events float64 // released event count (at least 1)
	ratio  float64 // released tau/delta = scale^shape
	evals  []weibullCandidate
	n      int // simulated releases so far
}

// weibullCandidate is one evaluated shape: its nuisance scale, the
// quantiles of the simulated released shapes, and the quantiles of the
// simulated scale pivot.
type weibullCandidate struct {
	p, lambda        float64
	qlo, qhi         float64 // released shape
	scaleLo, scaleHi float64 // basic interval for the scale given shape p
}

func (w *weibullInversion) accepted(c weibullCandidate) bool {
	return c.qlo <= w.fit.Shape && w.fit.Shape <= c.qhi
}

// eval simulates sims releases from shape p with its moment-matched scale.
// Every candidate uses the same random stream (common random numbers), so
// the quantiles move smoothly with p.
func (w *weibullInversion) eval(p float64) (weibullCandidate, error) {
	lambda := weibullMatchScale(p, w.fit.Shape, w.ratio)
	c := weibullCandidate{p: p, lambda: lambda}
	src := rand.NewChaCha8(w.seed)
	sim := newWeibullSim(p, lambda, w.events, w.res, w.bw, w.cfg.TimeMax)
	shapes := make([]float64, 0, w.sims)
	piv := make([]float64, 0, w.sims)
	for r := 0; r < w.sims; r++ {
		comp := sim.sample(src)
		d, err := normaliseWeibull(comp, w.cfg)
		if err != nil {
			return c, fmt.Errorf("simulated data: %w", err)
		}
		f, err := weibullFitLSP(src, d, weibullComputeLadder(d, w.cfg), w.cfg)
		if err != nil {
			return c, fmt.Errorf("simulated release: %w", err)
		}
		w.n++
		shapes = append(shapes, f.Shape)
		// the estimator of the scale given shape p: the scale whose
		// tau/delta matches the simulated release's
		q := math.Max(f.Shape, 1e-3) // a shape of 0 is a possible output
		lt := weibullMatchScale(p, q, math.Pow(f.Scale, q))
		piv = append(piv, math.Log(lt)-math.Log(lambda))
	}
	c.qlo, c.qhi = simQuantiles(shapes, w.alpha)
	a, b := simQuantiles(piv, w.alpha)
	c.scaleLo, c.scaleHi = lambda*math.Exp(-b), lambda*math.Exp(-a)
	w.evals = append(w.evals, c)
	return c, nil
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
		for s := 0; s < weibullInversionSteps; s++ {
			mid := math.Sqrt(lo * hi)
			c, err := w.eval(mid)
			if err != nil {
				return err
			}
			if c.qhi < w.fit.Shape {
				lo = mid
			} else {
				hi = mid
			}
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
		for s := 0; s < weibullInversionSteps; s++ {
			mid := math.Sqrt(lo * hi)
			c, err := w.eval(mid)
			if err != nil {
				return err
			}
			if c.qlo > w.fit.Shape {
				hi = mid
			} else {
				lo = mid
			}
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
	for _, c := range w.evals {
		if !w.accepted(c) && !(c.p >= iv.ShapeLower && c.p <= iv.ShapeUpper) {
			continue
		}
		iv.ScaleLower = math.Min(iv.ScaleLower, c.scaleLo)
		iv.ScaleUpper = math.Max(iv.ScaleUpper, c.scaleHi)
	}
	if iv.ScaleLower > iv.ScaleUpper {
		iv.ScaleLower, iv.ScaleUpper = math.NaN(), math.NaN()
	}
	iv.Sims = w.n
	return nil
}

// weibullMatchScale returns the scale lambda for which a Weibull(p, lambda)
// sample censored at 1 has E[sum min(T,1)^q] / E[events] = ratio (TLL's
// tau/delta at the released shape q): the candidate's nuisance scale that
// explains the released scale. E[min(T,1)^q] = int_0^1 S(u^(1/q)) du
// (Simpson, 64 cells); the ratio increases with lambda, so ln lambda is
// found by bisection in [-50, 50].
func weibullMatchScale(p, q, ratio float64) float64 {
	const m = 64
	var lu [m + 1]float64 // p ln(u^(1/q)) at the Simpson nodes
	for i := range lu {
		lu[i] = p * math.Log(float64(i)/m) / q
	}
	tllRatio := func(ll float64) float64 {
		f1 := -math.Expm1(-math.Exp(-p * ll))
		if !(f1 > 0) {
			return math.Inf(1)
		}
		s := 0.0
		for i, v := range lu {
			w := 2.0
			switch {
			case i == 0 || i == m:
				w = 1
			case i%2 == 1:
				w = 4
			}
			s += w * math.Exp(-math.Exp(v-p*ll))
		}
		return s / (3 * m) / f1
	}
	lo, hi := -50.0, 50.0
	for it := 0; it < 40; it++ {
		mid := (lo + hi) / 2
		if tllRatio(mid) < ratio {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
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
	hh := sha256.New()
	var b [8]byte
	put := func(v float64) {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		hh.Write(b[:])
	}
	put(fit.Shape)
	put(fit.Scale)
	put(fit.N)
	put(fit.Epsilon)
	hh.Write([]byte(fit.Method))
	keys := make([]string, 0, len(fit.Params))
	for k := range fit.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		hh.Write([]byte(k))
		put(fit.Params[k])
	}
	var seed [32]byte
	copy(seed[:], hh.Sum(nil))
	return seed
}

// weibullSim simulates data sets from a released fit (normalised units).
type weibullSim struct {
	shape, scale, f1, timeMax float64
	n                         int64
	res                       int
	bw                        float64 // > 0: times at bin starts
	cnt                       []float64
}

func newWeibullSim(shape, scale, events float64, res int, bw, timeMax float64) *weibullSim {
	f1 := -math.Expm1(-math.Pow(1/scale, shape))
	n := int64(math.Round(events / math.Max(f1, 1e-300)))
	n = min(max(n, 1), 1<<40)
	s := &weibullSim{shape: shape, scale: scale, f1: f1, timeMax: timeMax, n: n, res: res, bw: bw}
	if bw > 0 {
		s.res = int(math.Ceil(timeMax / bw))
	}
	s.cnt = make([]float64, s.res)
	return s
}

// sample draws one data set (times in data units).
func (s *weibullSim) sample(src *rand.ChaCha8) survival.Compressed {
	clear(s.cnt)
	e := binomial(src, s.n, s.f1)
	r := float64(s.res)
	for i := int64(0); i < e; i++ {
		u := float64(src.Uint64()>>11) * (1.0 / (1 << 53)) // [0, 1)
		// inverse CDF of the Weibull truncated to (0, 1)
		t := s.scale * math.Pow(-math.Log1p(-u*s.f1), 1/s.shape)
		var j int
		if s.bw > 0 {
			j = int(t * s.timeMax / s.bw)
		} else {
			j = int(t * r)
		}
		j = min(max(j, 0), s.res-1)
		s.cnt[j]++
	}
	var c survival.Compressed
	for j, k := range s.cnt {
		if k > 0 {
			tm := (float64(j) + 0.5) / r * s.timeMax
			if s.bw > 0 {
				tm = float64(j) * s.bw
			}
			c.Time = append(c.Time, tm)
			c.Events = append(c.Events, k)
			c.Count = append(c.Count, k)
		}
	}
	if cens := float64(s.n - e); cens > 0 {
		c.Time = append(c.Time, s.timeMax)
		c.Events = append(c.Events, 0)
		c.Count = append(c.Count, cens)
	}
	return c
}
