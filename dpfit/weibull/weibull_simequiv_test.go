package weibull

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// The interval simulation's shortcuts (a simulated shape's side from its
// data set's groups' counts, weibullCoarseSide, or from rung K of its
// cells' data set, weibullSimShapeSide) give the interval of computing
// every simulated shape from its whole ladder, decision for decision and
// bit for bit (the same streams feed both): on a release of 2,000 records
// and a large one (300,000 events, where most simulated shapes take a
// shortcut, both of which must be exercised); at conf 0.9 (19 simulated
// releases per candidate) to keep it short under -race.
func TestWeibullIntervalSidesMatchLadders(t *testing.T) {
	t.Parallel()
	large := WeibullFit{Shape: 1.623620764, Scale: 1.1579631610542005, Method: WeibullMethodLSP, Epsilon: 1, N: 300148.11667633057,
		Params: map[string]float64{"gamma": 10, "omega": 6, "rungs": 500, "shape_grid": 1e-09, "time_max": 5000, "tll_grid": 3.814697265625e-06, "tolerance": 1e-09}}
	fits := []WeibullFit{large}
	for _, tc := range []struct {
		n    int
		eps  float64
		seed uint64
	}{{2000, 1, 5}} {
		fit, err := FitWeibullLSP(dp.NewSeededSource(tc.seed), weibullSample(tc.n, 1.3, 600, 1000, 2), WeibullConfig{Epsilon: tc.eps, TimeMax: 1000})
		if err != nil {
			t.Fatal(err)
		}
		fits = append(fits, fit)
	}
	for i, fit := range fits {
		inversion := func(full bool) (*weibullInversion, WeibullInterval) {
			w := newWeibullInversion(fit, releaseConfig(fit), 19, 256, 0, 0.1)
			w.fullLadders = full
			return w, runInversion(t, w)
		}
		fast, ivFast := inversion(false)
		whole, ivWhole := inversion(true)
		t.Logf("release %d (shape %v, N %.0f): %d simulated shapes, %d settled from the groups' counts, %d from rung K; interval %+v",
			i, fit.Shape, fit.N, fast.n, fast.coarse.Load(), fast.sides.Load(), ivFast)
		if ivFast != ivWhole {
			t.Errorf("release %d: interval %+v with the shortcuts, %+v from every whole ladder", i, ivFast, ivWhole)
		}
		if len(fast.evals) != len(whole.evals) {
			t.Fatalf("release %d: %d candidates with the shortcuts, %d without", i, len(fast.evals), len(whole.evals))
		}
		for j := range fast.evals {
			a, b := fast.evals[j], whole.evals[j]
			if a.p != b.p || fast.accepted(a) != whole.accepted(b) || (a.qhi < fit.Shape) != (b.qhi < fit.Shape) || (a.qlo > fit.Shape) != (b.qlo > fit.Shape) {
				t.Errorf("release %d: candidate %v decided differently", i, a.p)
			}
		}
		if whole.coarse.Load() != 0 || whole.sides.Load() != 0 {
			t.Errorf("release %d: the whole-ladder run took a shortcut", i)
		}
		if i == 0 && (fast.coarse.Load() < int64(fast.n)/2 || fast.sides.Load() == 0) {
			t.Errorf("release %d: %d of %d simulated shapes from the groups' counts, %d from rung K: the shortcuts are not exercised",
				i, fast.coarse.Load(), fast.n, fast.sides.Load())
		}
	}
}

// The interval work of issue 24 changes no release: FitWeibullLSP's
// published shape, scale and noisy event count for fixed seeds are the
// bits they were before it (recorded from commit 0aacb77).
func TestWeibullReleaseBitsUnchanged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n                 int
		eps               float64
		seed              uint64
		shape, scale, cnt uint64
	}{
		{2000, 1, 5, 0x3ff5383dfc066da5, 0x3fe2ece7e369a666, 0x409b1785ed000000},
		{150, 2, 6, 0x3ff2cf2517cdb841, 0x3fe3181eacbeb726, 0x40603ce360000000},
		{20000, 0.5, 7, 0x3ff4ec7fddf582e9, 0x3fe3382d9129f730, 0x40d0bf5848800000},
	} {
		fit, err := FitWeibullLSP(dp.NewSeededSource(tc.seed), weibullSample(tc.n, 1.3, 600, 1000, 2), WeibullConfig{Epsilon: tc.eps, TimeMax: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(fit.Shape) != tc.shape || math.Float64bits(fit.Scale) != tc.scale || math.Float64bits(fit.N) != tc.cnt {
			t.Errorf("n %d epsilon %v seed %d: released shape %v scale %v N %v, want %v %v %v", tc.n, tc.eps, tc.seed,
				fit.Shape, fit.Scale, fit.N, math.Float64frombits(tc.shape), math.Float64frombits(tc.scale), math.Float64frombits(tc.cnt))
		}
	}
}
