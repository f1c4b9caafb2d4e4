package weibull

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// weibullSample draws n Weibull(shape, scale) times (data units) censored
// at timeMax.
func weibullSample(n int, shape, scale, timeMax float64, seed uint64) survival.Compressed {
	rng := rand.New(rand.NewPCG(seed, 2))
	tt := make([]float64, n)
	ee := make([]bool, n)
	for i := range tt {
		t := scale * math.Pow(-math.Log(1-rng.Float64()), 1/shape)
		tt[i], ee[i] = math.Min(math.Ceil(t), timeMax), t < timeMax
	}
	c, err := survival.CompressChecked(tt, ee)
	if err != nil {
		panic(err)
	}
	return c
}

// The interval is a deterministic function of the release (seeded by its
// hash), well formed, and contains a typical release's own estimate.
func TestWeibullIntervalsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := WeibullConfig{Epsilon: 2, TimeMax: 1000, Rungs: 100}
	fit, err := FitWeibullLSP(dp.NewSeededSource(1), weibullSample(150, 1.3, 600, 1000, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := WeibullIntervals(fit, WeibullIntervalOptions{Sims: 39})
	if err != nil {
		t.Fatal(err)
	}
	b, err := WeibullIntervals(fit, WeibullIntervalOptions{Sims: 39})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("not deterministic: %+v vs %+v", a, b)
	}
	t.Logf("release shape %.3f scale %.3f N %.1f: shape [%.3f, %.3f], scale [%.3f, %.3f], %d simulated releases",
		fit.Shape, fit.Scale, fit.N, a.ShapeLower, a.ShapeUpper, a.ScaleLower, a.ScaleUpper, a.Sims)
	if !(0 <= a.ShapeLower && a.ShapeLower <= fit.Shape && fit.Shape <= a.ShapeUpper && a.ShapeUpper <= 10) {
		t.Errorf("shape interval [%v, %v] around %v", a.ShapeLower, a.ShapeUpper, fit.Shape)
	}
	if !(0 < a.ScaleLower && a.ScaleLower <= a.ScaleUpper) {
		t.Errorf("scale interval [%v, %v]", a.ScaleLower, a.ScaleUpper)
	}
	// another release of the same data gets another interval
	fit.Shape += fit.Params["shape_grid"]
	if c, err := WeibullIntervals(fit, WeibullIntervalOptions{Sims: 39}); err != nil || c == a {
		t.Errorf("a different release gives the same interval (%v)", err)
	}
}

func TestWeibullIntervalsErrors(t *testing.T) {
	t.Parallel()
	good := WeibullFit{Shape: 1, Scale: 1, N: 50, Epsilon: 1, Method: WeibullMethodLSP,
		Params: map[string]float64{"omega": 6, "gamma": 10, "rungs": 20, "time_max": 100, "tolerance": 1e-9}}
	for name, tc := range map[string]struct {
		fit WeibullFit
		opt WeibullIntervalOptions
	}{
		"non-private": {func() WeibullFit { f := good; f.Epsilon = math.Inf(1); return f }(), WeibullIntervalOptions{}},
		"bad conf":    {good, WeibullIntervalOptions{Conf: 1.5}},
		"few sims":    {good, WeibullIntervalOptions{Sims: 38}},
		"bin width":   {good, WeibullIntervalOptions{BinWidth: -1}},
		"method":      {func() WeibullFit { f := good; f.Method = "x"; return f }(), WeibullIntervalOptions{}},
		"params":      {func() WeibullFit { f := good; f.Params = map[string]float64{}; return f }(), WeibullIntervalOptions{}},
	} {
		if _, err := WeibullIntervals(tc.fit, tc.opt); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// the interval is a function of the published release: n is published
	// clamped at 0, so a negative noisy count gives the interval of 0
	neg, zero := good, good
	neg.N, zero.N = -3, 0
	a, err := WeibullIntervals(neg, WeibullIntervalOptions{Sims: 39})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := WeibullIntervals(zero, WeibullIntervalOptions{Sims: 39}); err != nil || a != b {
		t.Errorf("n -3 and n 0 (both published as 0) give %+v and %+v (%v)", a, b, err)
	}
	// a degenerate release (shape 0) has null intervals, not an error
	f := good
	f.Shape = 0
	iv, err := WeibullIntervals(f, WeibullIntervalOptions{Sims: 39})
	if err != nil || !math.IsNaN(iv.ShapeLower) || !math.IsNaN(iv.ScaleUpper) {
		t.Errorf("shape 0: %+v, %v", iv, err)
	}
}

// weibullMatchScale recovers the scale of a large Weibull sample censored
// at 1 from its tau/delta (no noise): the nuisance scale of a candidate is
// the one that explains the released ratio.
func TestWeibullMatchScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ p, lambda, q float64 }{{1.3, 0.6, 1.3}, {0.8, 2.5, 0.8}, {2, 0.9, 1.1}, {1, 4, 3}} {
		c := weibullSample(200_000, tc.p, tc.lambda*1000, 1000, 3)
		var tau, delta float64
		for i, tm := range c.Time {
			tau += c.Count[i] * math.Pow(tm/1000, tc.q)
			delta += c.Events[i]
		}
		got := weibullMatchScale(tc.p, tc.q, tau/delta)
		if math.Abs(got/tc.lambda-1) > 0.03 {
			t.Errorf("p %v lambda %v q %v: matched scale %v", tc.p, tc.lambda, tc.q, got)
		}
	}
}

// A candidate shape accepted early (k simulated shapes on each side of the
// released one; the rest of its ladders skipped) is accepted by the whole
// simulation too, and a rejected one is never stopped early; the skipped
// ladders' random draws are still taken, so the interval (shape and
// scale) equals the whole simulation's exactly, on a small and a larger
// sample. The interval depends neither on the number of goroutines of the
// simulated releases nor on their timing: the early run uses GOMAXPROCS,
// the whole one 3 and a second early run 1 (the whole run on 3 stands in
// for a fourth inversion, early on 3, that this test made until
// 2026-11-26: a quarter of its CPU).
func TestWeibullIntervalEarlyAcceptance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n   int
		eps float64
	}{{150, 2}, {2000, 1}} {
		cfg := WeibullConfig{Epsilon: tc.eps, TimeMax: 1000}
		fit, err := FitWeibullLSP(dp.NewSeededSource(5), weibullSample(tc.n, 1.3, 600, 1000, 2), cfg)
		if err != nil {
			t.Fatal(err)
		}
		inversion := func(all bool, workers int) (*weibullInversion, WeibullInterval) {
			w := newWeibullInversion(fit, releaseConfig(fit), 39, 256, 0, 0.05)
			w.allShapes, w.workers = all, workers
			return w, runInversion(t, w)
		}
		early, ivEarly := inversion(false, 0)
		whole, ivWhole := inversion(true, 3)
		if ivEarly != ivWhole {
			t.Errorf("n %d epsilon %v: interval %+v with early acceptance (GOMAXPROCS goroutines), %+v without (3)", tc.n, tc.eps, ivEarly, ivWhole)
		}
		if _, iv := inversion(false, 1); iv != ivEarly {
			t.Errorf("n %d epsilon %v: interval %+v on 1 goroutine, %+v on GOMAXPROCS", tc.n, tc.eps, iv, ivEarly)
		}
		accepted := 0
		for i := range early.evals {
			a, b := early.evals[i], whole.evals[i]
			if early.accepted(a) != whole.accepted(b) || (a.qhi < fit.Shape) != (b.qhi < fit.Shape) || (a.qlo > fit.Shape) != (b.qlo > fit.Shape) {
				t.Errorf("n %d epsilon %v: candidate %v decided differently", tc.n, tc.eps, a.p)
			}
			if early.accepted(a) {
				accepted++
			}
		}
		if accepted == 0 {
			t.Errorf("n %d epsilon %v: no candidate accepted: the early stop is not exercised", tc.n, tc.eps)
		}
	}
}

// weibullMatchScale's Illinois bracket gives bisection's scale: a
// reference 40-step bisection of the same ratio function, over shapes,
// exponents and ratios from tiny to huge (both ends of [-50, 50]
// included), to 1e-9 relative.
func TestWeibullMatchScaleBracketEqualsBisection(t *testing.T) {
	t.Parallel()
	bisect := func(p, q, ratio float64) float64 {
		const m = 64
		tll := func(ll float64) float64 {
			f1 := -math.Expm1(-math.Exp(-p * ll))
			if !(f1 > 0) {
				return math.Inf(1)
			}
			s := 0.0
			for i := 0; i <= m; i++ {
				w := 2.0
				switch {
				case i == 0 || i == m:
					w = 1
				case i%2 == 1:
					w = 4
				}
				s += w * math.Exp(-math.Exp(p*math.Log(float64(i)/m)/q-p*ll))
			}
			return s / (3 * m) / f1
		}
		lo, hi := -50.0, 50.0
		for it := 0; it < 40; it++ {
			mid := (lo + hi) / 2
			if tll(mid) < ratio {
				lo = mid
			} else {
				hi = mid
			}
		}
		return math.Exp((lo + hi) / 2)
	}
	for _, p := range []float64{0.01, 0.3, 1, 2.5, 9.9} {
		for _, q := range []float64{0.05, 1, 4} {
			for _, ratio := range []float64{1e-30, 1e-6, 0.01, 0.3, 0.9, 1, 3, 1e6, 1e300, math.NaN()} {
				got, want := weibullMatchScale(p, q, ratio), bisect(p, q, ratio)
				if !(math.Abs(got/want-1) <= 1e-9) {
					t.Errorf("p %v q %v ratio %v: %v, bisection %v", p, q, ratio, got, want)
				}
			}
		}
	}
}

// The baselines' noise-only intervals cover the clamped MLE the mechanism
// perturbs: 400 Laplace releases at epsilon 40 (at small epsilon the
// interval is the whole box), coverage at least 0.95 - 3 SE (SE = 0.011;
// false alarm 0.1%), and the interval narrower than the box.
func TestWeibullBaselineIntervalCoverage(t *testing.T) {
	t.Parallel()
	c := weibullSample(400, 1.3, 600, 1000, 4)
	cfg := WeibullConfig{Epsilon: 40, TimeMax: 1000}.WithDefaults()
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, l := weibullClampedMLE(d.compressed(), cfg.Gamma, cfg.ScaleBound)
	src := dp.NewSeededSource(9)
	covP, covL, reps := 0, 0, 400
	for r := 0; r < reps; r++ {
		f, err := FitWeibullLaplace(src, c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		iv, err := WeibullIntervals(f, WeibullIntervalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r == 0 && !(iv.ShapeUpper-iv.ShapeLower < cfg.Gamma/2) {
			t.Fatalf("shape interval [%v, %v] not informative", iv.ShapeLower, iv.ShapeUpper)
		}
		if iv.ShapeLower <= p && p <= iv.ShapeUpper {
			covP++
		}
		if iv.ScaleLower <= l && l <= iv.ScaleUpper {
			covL++
		}
	}
	se := math.Sqrt(0.95 * 0.05 / float64(reps))
	for name, cv := range map[string]int{"shape": covP, "scale": covL} {
		if c := float64(cv) / float64(reps); c < 0.95-3*se {
			t.Errorf("%s: coverage %.3f", name, c)
		}
	}
}

// TestWeibullPowCacheSameLadder: the simulation's ladder reads t^q from
// the simulator's cache (weibullPowCache) instead of computing an exp per
// data set; the ladders are the same, bit for bit.
func TestWeibullPowCacheSameLadder(t *testing.T) {
	t.Parallel()
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 1000}.WithDefaults()
	sc := cfg
	sc.Rungs = weibullSimRungs(cfg)
	for _, tc := range []struct{ shape, scale, events float64 }{{1.3, 0.6, 60}, {0.5, 2, 3000}, {4, 0.4, 300000}} {
		sim := newWeibullSim(tc.shape, tc.scale, tc.events, 512, 0, cfg.TimeMax)
		src := rand.NewChaCha8([32]byte{7})
		for r := 0; r < 5; r++ {
			d := sim.sampleData(src, cfg)
			if d.pc == nil || len(d.cell) != len(d.t) {
				t.Fatal("sampleData: no cache")
			}
			cached := weibullComputeLadderOpt(d, sc, true)
			d.pc = nil
			plain := weibullComputeLadderOpt(d, sc, true)
			if !slices.Equal(cached.Lower[1:], plain.Lower[1:]) || !slices.Equal(cached.Upper[1:], plain.Upper[1:]) {
				t.Fatalf("shape %v draw %d: the cached powers change the ladder", tc.shape, r)
			}
		}
	}
}

// runInversion is the interval w inverts.
func runInversion(t *testing.T, w *weibullInversion) WeibullInterval {
	t.Helper()
	var iv WeibullInterval
	if err := w.run(&iv); err != nil {
		t.Fatal(err)
	}
	return iv
}
