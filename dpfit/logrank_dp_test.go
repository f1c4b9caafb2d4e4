package dpfit

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// The simulation's binomial sampler against the exact distribution:
// chi-square over the support of Binomial(n, p) (cells with expectation
// < 5 pooled into the tails), 20000 draws, fixed seed; the critical value
// is the 0.999 quantile (false alarm 0.1% per case).
func TestBinomialSampler(t *testing.T) {
	for _, tc := range []struct {
		n int64
		p float64
	}{{20, 0.3}, {50, 0.02}, {30, 0.85}, {5, 0.5}, {200, 0.3}, {1000, 0.9}, {100000, 0.01}} { // the last three: the rejection path (mean > binomialWaitingMean)
		src := rand.NewChaCha8([32]byte{byte(tc.n), 7})
		const draws = 20000
		counts := make([]float64, tc.n+1)
		for i := 0; i < draws; i++ {
			x := binomial(src, tc.n, tc.p)
			if x < 0 || x > tc.n {
				t.Fatalf("Binomial(%d, %v) gave %d", tc.n, tc.p, x)
			}
			counts[x]++
		}
		pmf := make([]float64, tc.n+1)
		for k := int64(0); k <= tc.n; k++ {
			lg, _ := math.Lgamma(float64(tc.n + 1))
			lk, _ := math.Lgamma(float64(k + 1))
			lnk, _ := math.Lgamma(float64(tc.n - k + 1))
			pmf[k] = math.Exp(lg - lk - lnk + float64(k)*math.Log(tc.p) + float64(tc.n-k)*math.Log1p(-tc.p))
		}
		chi, df, obs, exp := 0.0, -1, 0.0, 0.0
		for k := range pmf {
			obs += counts[k]
			exp += pmf[k] * draws
			if exp >= 5 {
				chi += (obs - exp) * (obs - exp) / exp
				df++
				obs, exp = 0, 0
			}
		}
		if exp > 0 {
			chi += (obs - exp) * (obs - exp) / math.Max(exp, 1e-9)
			df++
		}
		// 0.999 quantile of chi-square(df) by the Wilson–Hilferty approximation
		z := 3.090
		d := float64(df)
		crit := d * math.Pow(1-2/(9*d)+z*math.Sqrt(2/(9*d)), 3)
		if chi > crit {
			t.Errorf("Binomial(%d, %v): chi-square %.1f > %.1f (df %d)", tc.n, tc.p, chi, crit, df)
		}
	}
}

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
