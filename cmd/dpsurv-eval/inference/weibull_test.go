package inference

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsurv/dpsurv/internal/testtier"
)

// weibullWorld is a synthetic cohort: n records with Weibull(shape, scale)
// times (data units, time_max 1000), uniform random censoring on (0, 2000)
// and administrative censoring at 1000.
func weibullWorld(n int, shape, scale float64, seed uint64) Data {
	rng := rand.New(rand.NewPCG(seed, 1))
	var d Data
	d.Labels = []string{"a"}
	for i := 0; i < n; i++ {
		t := scale * math.Pow(-math.Log(1-rng.Float64()), 1/shape)
		c := math.Min(2000*rng.Float64(), 1000)
		d.Time = append(d.Time, math.Ceil(math.Min(t, c)))
		d.Event = append(d.Event, t <= c)
		d.Cohort = append(d.Cohort, 0)
	}
	return d
}

// TestWeibullIntervalCoverage: the noise-aware 95% shape and scale
// intervals of LSP+TLL releases (weibull.WeibullIntervals) cover the truth.
// The world's censoring (uniform random plus administrative) differs from
// the interval's simulation model (administrative only), on purpose.
//
// Short tier: a synthetic world of 150 records (shape 1.3, scale 700 of
// time_max 1000; about 60 events), 3 bootstrap releases at each epsilon in
// {0.5, 1, 2} with the default 39 simulations per candidate: at most 2 of
// the 9 shape (and of the 9 scale) intervals may miss (false alarm 0.8%
// each at coverage 0.95, binomial). A broken interval covering 0.6 passes
// with probability 0.25 only; the full tier below is the real check.
func TestWeibullIntervalCoverage(t *testing.T) {
	t.Parallel() // independent seeded studies: make stats uses both cores
	d := weibullWorld(150, 1.3, 700, 5)
	var shapeMiss, scaleMiss, total int
	for i, eps := range []float64{0.5, 1, 2} {
		r, err := RunWeibull(d, WeibullConfig{Epsilon: eps, TimeMax: 1000, Reps: 3, Seed: uint64(30 + i)})
		if err != nil {
			t.Fatal(err)
		}
		logWeibull(t, eps, r)
		// at about 60 events and epsilon <= 1 the shape interval is the
		// whole [0, gamma] (the LSP release is that noisy); at epsilon 2 it
		// must be informative, or coverage would be trivial
		if eps == 2 && !(r.ShapeWidth < 5) {
			t.Errorf("epsilon 2: median shape interval width %.3f, want below half of gamma", r.ShapeWidth)
		}
		shapeMiss += r.Intervals - r.ShapeCovered
		scaleMiss += r.Intervals - r.ScaleCovered
		total += r.Intervals
	}
	if shapeMiss > 2 || scaleMiss > 2 {
		t.Errorf("of %d intervals, %d shape and %d scale intervals miss the truth (at most 2 allowed)", total, shapeMiss, scaleMiss)
	}
}

// TestWeibullIntervalCoverageFull: the same on a bootstrap world built from
// flchain (each of the 10 cohorts, about 790 records and 220 deaths; truth:
// the cohort's full-data MLE with time_max 5400 days), 4 releases per
// cohort at each epsilon, 40 intervals per epsilon. Each epsilon's
// coverage of the shape and of the scale must be at least 0.80 (at most 8
// misses of 40) and the pooled coverage of the 120 at least 0.90 (at most
// 12 misses). At a true coverage of 0.95 the false alarm of the per-epsilon
// checks is 0.3% each and of the pooled check 1.1% (binomial).
func TestWeibullIntervalCoverageFull(t *testing.T) {
	t.Parallel() // independent seeded studies: make stats uses both cores
	testtier.Heavy(t, "weibull interval coverage (about 5 minutes)")
	d := flchain(t)
	var shapeMiss, scaleMiss, total int
	for i, eps := range []float64{0.5, 1, 2} {
		r, err := RunWeibull(d, WeibullConfig{Epsilon: eps, TimeMax: 5400, Reps: 4, Seed: uint64(40 + i)})
		if err != nil {
			t.Fatal(err)
		}
		logWeibull(t, eps, r)
		if m := r.Intervals - r.ShapeCovered; m > 8 {
			t.Errorf("epsilon %v: %d of %d shape intervals miss", eps, m, r.Intervals)
		}
		if m := r.Intervals - r.ScaleCovered; m > 8 {
			t.Errorf("epsilon %v: %d of %d scale intervals miss", eps, m, r.Intervals)
		}
		shapeMiss += r.Intervals - r.ShapeCovered
		scaleMiss += r.Intervals - r.ScaleCovered
		total += r.Intervals
	}
	if shapeMiss > 12 || scaleMiss > 12 {
		t.Errorf("pooled: of %d intervals, %d shape and %d scale intervals miss (at most 12 allowed)", total, shapeMiss, scaleMiss)
	}
}

func logWeibull(t *testing.T, eps float64, r WeibullCoverage) {
	t.Helper()
	t.Logf("epsilon %v: shape coverage %.3f (median width %.3f), scale %.3f (median width %.3f) of %d; non-private Wald %.3f (%.3f), %.3f (%.3f) of %d",
		eps, r.ShapeCoverage(), r.ShapeWidth, r.ScaleCoverage(), r.ScaleWidth, r.Intervals,
		r.NonPrivateShapeCoverage(), r.NonPrivateShapeWidth, r.NonPrivateScaleCoverage(), r.NonPrivateScaleWidth, r.NonPrivateFits)
}
