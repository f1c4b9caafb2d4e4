package weibull

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/stattest"
)

// The simulated data sets of the Weibull intervals are drawn binned: the
// cell counts must follow the multinomial of binning Weibull event times
// truncated to (0, time_max). Chi-square over the cells with expected count
// >= 5 (the rest pooled) for both grids (Resolution and an aggregator's
// bin width), fixed seed; false alarm 0.1% each. At 2,048 cells and at
// 4,000 bins the cells are drawn in two stages (the groups' counts, then
// each group's split among its cells: up to 40 cells a group). The fit
// reads them through sampleData, which must equal normaliseWeibull of
// sample.
func TestWeibullSimCellCounts(t *testing.T) {
	t.Parallel()
	checkSampleData(t)
	for _, tc := range []struct {
		name string
		res  int
		bw   float64
	}{{"resolution 64", 64, 0}, {"bin width 30 of 1000", 16, 30}, {"resolution 2048", 2048, 0}, {"bin width 0.25 of 1000", 16, 0.25}} {
		t.Run(tc.name, func(t *testing.T) {
			const shape, scale, timeMax = 1.4, 0.6, 1000.0
			sim := newWeibullSim(shape, scale, 2000, tc.res, tc.bw, timeMax)
			src := rand.NewChaCha8([32]byte{7})
			cells := sim.res
			obs := make([]float64, cells)
			events := 0.0
			const reps = 200
			for r := 0; r < reps; r++ {
				c := sim.sample(src)
				for i, tm := range c.Time {
					if c.Events[i] == 0 {
						continue
					}
					var j int
					if tc.bw > 0 {
						j = int(math.Round(tm / tc.bw))
					} else {
						j = int(tm / timeMax * float64(tc.res))
					}
					obs[j] += c.Events[i]
					events += c.Events[i]
				}
			}
			width := 1 / float64(tc.res)
			if tc.bw > 0 {
				width = tc.bw / timeMax
			}
			cdf := func(u float64) float64 { return -math.Expm1(-math.Pow(u/scale, shape)) }
			exp := make([]float64, cells)
			for j := range exp {
				a, b := float64(j)*width, math.Min(float64(j+1)*width, 1)
				exp[j] = events * (cdf(b) - cdf(a)) / cdf(1)
			}
			chi, df := stattest.PooledChiSquare(obs, exp)
			crit := stattest.ChiSquareCritical(df, 0.001)
			t.Logf("chi-square %.1f on %d df (0.999 quantile %.1f), %v events", chi, df, crit, events)
			if chi > crit {
				t.Errorf("cell counts do not follow the truncated Weibull: chi-square %.1f > %.1f", chi, crit)
			}
		})
	}
}

// The simulation's cost follows the number of cells, not the record count:
// a release with a noisy event count of 10^9 (a window of a billion
// records) gets its interval. Drawing every event time (the old sampler)
// would take about 10^9 draws per simulated data set, hours in all.
func TestWeibullIntervalsHugeCount(t *testing.T) {
	t.Parallel()
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 1000, Rungs: 100}
	fit, err := FitWeibullLSP(dp.NewSeededSource(3), weibullSample(2000, 1.3, 600, 1000, 3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	fit.N = 1e9
	iv, err := WeibullIntervals(fit, WeibullIntervalOptions{Sims: 39, Resolution: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shape %.4f: [%.4f, %.4f]; scale %.4f: [%.4f, %.4f]; %d simulated releases",
		fit.Shape, iv.ShapeLower, iv.ShapeUpper, fit.Scale, iv.ScaleLower, iv.ScaleUpper, iv.Sims)
	if !(iv.ShapeLower <= fit.Shape && fit.Shape <= iv.ShapeUpper) || !(iv.ScaleLower <= iv.ScaleUpper) {
		t.Errorf("interval [%v, %v] does not hold the released shape %v (scale [%v, %v])",
			iv.ShapeLower, iv.ShapeUpper, fit.Shape, iv.ScaleLower, iv.ScaleUpper)
	}
}

// The simulation's float LSP sampler has Sample's distribution: every draw
// lies on the level it was drawn for, and the level frequencies follow
// RungProbabilities (chi-square over levels with expected count >= 5,
// pooled tail; false alarm 0.1%).
func TestWeibullLadderSampleFloat(t *testing.T) {
	t.Parallel()
	for _, eps := range []float64{0.5, 2} {
		cfg := WeibullConfig{Epsilon: eps, TimeMax: 1000, Rungs: 60, Tolerance: 1e-3}.WithDefaults()
		d, err := normaliseWeibull(weibullSample(80, 1.3, 600, 1000, 9), cfg)
		if err != nil {
			t.Fatal(err)
		}
		lad := weibullComputeLadder(d, cfg)
		probs := lad.RungProbabilities(eps)
		src := rand.NewChaCha8([32]byte{3})
		const draws = 20000
		obs := make([]float64, len(probs))
		for i := 0; i < draws; i++ {
			p := weibullLadderSampleFloat(lad, src, eps)
			k := lad.Level(p)
			if k < 1 {
				t.Fatalf("epsilon %v: draw %v outside [0, gamma]", eps, p)
			}
			obs[k]++
		}
		exp := make([]float64, len(probs))
		for k, pk := range probs {
			exp[k] = draws * pk
		}
		chi, df := stattest.PooledChiSquare(obs, exp)
		crit := stattest.ChiSquareCritical(max(df, 1), 0.001)
		t.Logf("epsilon %v: chi-square %.1f on %d df (0.999 quantile %.1f)", eps, chi, df, crit)
		if chi > crit {
			t.Errorf("epsilon %v: level frequencies differ from RungProbabilities: chi-square %.1f > %.1f", eps, chi, crit)
		}
	}
}

// checkSampleData: sampleData is normaliseWeibull of sample, the same
// data set from the same stream, on both grids and with times clamped at
// exp(-omega).
func checkSampleData(t *testing.T) {
	t.Helper()
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 1000}.WithDefaults()
	for _, bw := range []float64{0, 30} {
		sim := newWeibullSim(0.8, 0.6, 5000, 2048, bw, 1000)
		a, b := rand.NewChaCha8([32]byte{5}), rand.NewChaCha8([32]byte{5})
		for r := 0; r < 3; r++ {
			want, err := normaliseWeibull(sim.sample(a), cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := sim.sampleData(b, cfg)
			if len(got.cell) != len(got.t) || got.pc == nil {
				t.Fatalf("bin width %v, draw %d: sampleData without its cells' power cache", bw, r)
			}
			got.cell, got.pc = nil, nil // the simulator's cells: not in normaliseWeibull's data
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("bin width %v, draw %d: sampleData differs from normaliseWeibull(sample)", bw, r)
			}
		}
	}
}

// The interval simulation's ladder (fast: a coarser scan, Illinois root
// brackets, t^p by repeated multiplication) against the releases' (exact
// scan, bisection): every rung end within a few grid steps, on the data
// sets the simulation draws (about 2,000 cells, n from 200 to 10^6) and on
// the real samples of TestWeibullLadderMatchesDirect. A grid step of the
// rung ends is 1e-9 of a shape whose levels span thousands of grid points.
func TestWeibullFastLadderMatchesRelease(t *testing.T) {
	t.Parallel()
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 1000}.WithDefaults()
	cfg.Rungs = weibullSimRungs(cfg)
	check := func(t *testing.T, d weibullData, cfg WeibullConfig) {
		t.Helper()
		fast := weibullComputeLadderOpt(d, cfg, true)
		slow := weibullComputeLadderOpt(d, cfg, false)
		worst := 0.0
		for k := 1; k < len(fast.Lower); k++ {
			worst = max(worst, math.Abs(fast.Lower[k]-slow.Lower[k]), math.Abs(fast.Upper[k]-slow.Upper[k]))
		}
		if worst > 3.5*cfg.Tolerance {
			t.Fatalf("fast and release ladders differ by %v (tolerance %v)", worst, cfg.Tolerance)
		}
	}
	for _, tc := range []struct {
		shape, scale, events float64
	}{{1.4, 0.6, 200}, {0.5, 2, 5000}, {3, 0.5, 300000}, {1.1, 0.8, 1e6}, {8, 0.9, 20000}} {
		sim := newWeibullSim(tc.shape, tc.scale, tc.events, DefaultWeibullIntervalResolution, 0, cfg.TimeMax)
		src := rand.NewChaCha8([32]byte{3})
		for r := 0; r < 3; r++ {
			check(t, sim.sampleData(src, cfg), cfg)
		}
	}
	for _, name := range []string{"kidney", "lung"} {
		r, tmax := loadWB(t, name)
		c := cfg
		c.TimeMax = tmax
		d, err := normaliseWeibull(r.compress(), c)
		if err != nil {
			t.Fatal(err)
		}
		check(t, d, c)
	}
}

// rootBracket brackets the same crossing as bisectBracket, to within the
// final width, on smooth, kinked, flat and non-bracketing functions.
func TestRootBracketMatchesBisection(t *testing.T) {
	t.Parallel()
	const width, iters = 0.15, 28
	w := width / (1 << iters)
	for i, f := range []func(float64) float64{
		func(x float64) float64 { return x - 0.0123456789 },
		func(x float64) float64 { return math.Exp(40*x) - 2 },
		func(x float64) float64 { return -1/(x+1e-300) + 1/0.07 },    // -Inf-like near 0
		func(x float64) float64 { return min(x-0.1, 0) + (x - 0.1) }, // kinked
		func(x float64) float64 { return math.Cbrt(x - 0.149999) },   // steep at the root
		func(x float64) float64 { return x - 1 },                     // no crossing: f(width) <= 0
		func(x float64) float64 { return x + 1 },                     // no crossing: f(0) > 0
	} {
		lo, hi := rootBracket(f, width, iters, f(0), f(width))
		blo, bhi := bisectBracket(f, width, iters)
		if hi-lo > w*(1+1e-9) || math.Abs(lo-blo) > 2*w || math.Abs(hi-bhi) > 2*w {
			t.Errorf("function %d: [%v, %v] (width %v), bisection [%v, %v]", i, lo, hi, hi-lo, blo, bhi)
		}
	}
}
