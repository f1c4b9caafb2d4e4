package km

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// The calibrated p-values are a reproducible function of the release (the
// simulations are seeded from the released counts), multiples of
// 1/(sims+1), and the naive p-values are kept under their own names.
func TestCalibratedLogRankReproducible(t *testing.T) {
	d := loadKMData(t, "lung")
	h := d.histogram(t, DefaultBinWidth(1100), 1100)
	o := KMOptions{Epsilon: 1, LogRankSims: 39, IntervalSims: -1}
	a, err := HierarchicalKM(h, dp.NewSeededSource(4), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := HierarchicalKM(h, dp.NewSeededSource(4), o)
	if err != nil {
		t.Fatal(err)
	}
	if a.LogRank.P != b.LogRank.P || a.LogRankCalibration == "" {
		t.Fatalf("p %v then %v (%q)", a.LogRank.P, b.LogRank.P, a.LogRankCalibration)
	}
	if k := a.LogRank.P * 40; math.Abs(k-math.Round(k)) > 1e-9 || a.LogRank.P <= 0 || a.LogRank.P > 1 {
		t.Errorf("p %v is not a multiple of 1/40 in (0, 1]", a.LogRank.P)
	}
	if math.IsNaN(a.LogRankNaiveP) || len(a.PairwiseNaiveP) != len(a.Pairwise) {
		t.Errorf("naive p %v, %d naive pairwise for %d pairs", a.LogRankNaiveP, len(a.PairwiseNaiveP), len(a.Pairwise))
	}
	off, err := HierarchicalKM(h, dp.NewSeededSource(4), KMOptions{Epsilon: 1, LogRankSims: -1, IntervalSims: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(off.LogRank.P) || off.LogRankCalibration != LogRankCalibrationNone || off.LogRankNaiveP != a.LogRankNaiveP {
		t.Errorf("disabled calibration: p %v (%q), naive %v", off.LogRank.P, off.LogRankCalibration, off.LogRankNaiveP)
	}
}

// The null releases stop at the per-bin counts (countsOnly: no curves, no
// pooled curve): the calibrated p-values equal those of full simulated
// releases, for both methods.
func TestCalibratedLogRankCountsOnly(t *testing.T) {
	d := loadKMData(t, "lung")
	h := d.histogram(t, DefaultBinWidth(1100), 1100)
	o := KMOptions{Epsilon: 1, LogRankSims: 39, IntervalSims: -1}
	for _, fit := range []releaseFunc{HierarchicalKM, NoisyHistogramKM} {
		res, err := fit(h, dp.NewSeededSource(4), o)
		if err != nil {
			t.Fatal(err)
		}
		full := res
		full.Pairwise = append([]survival.Pairwise(nil), res.Pairwise...)
		full.LogRank.P, full.LogRank.ChiSq = res.LogRankNaiveP, res.LogRank.ChiSq
		ow, err := o.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		wholeRelease := func(hs *Histogram, src dp.Source, so KMOptions) (KMResult, error) {
			if !so.countsOnly {
				t.Fatal("the null releases are not counts-only")
			}
			so.countsOnly = false
			return fit(hs, src, so)
		}
		if err := calibrateLogRank(&full, h, ow, wholeRelease); err != nil {
			t.Fatal(err)
		}
		if full.LogRank.P != res.LogRank.P || len(full.Pairwise) != len(res.Pairwise) {
			t.Fatalf("p %v from whole releases, %v counts-only", full.LogRank.P, res.LogRank.P)
		}
		for i := range full.Pairwise {
			if full.Pairwise[i].P != res.Pairwise[i].P {
				t.Errorf("pair %d: p %v from whole releases, %v counts-only", i, full.Pairwise[i].P, res.Pairwise[i].P)
			}
		}
	}
}
