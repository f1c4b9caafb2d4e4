package dpfit

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsurv/dpsurv/internal/stattest"
)

// BinomialSim follows the binomial pmf: chi-square over the values with
// expected count >= 5 (tails pooled), 40,000 draws per case, fixed seed,
// false alarm 0.1% per case; the cases cover the waiting-time branch (mean
// 9), the BTRS branch from just above its threshold (means 10.1 to 12) to
// large n, and p above 1/2.
func TestBinomialSim(t *testing.T) {
	src := rand.NewChaCha8([32]byte{11})
	for _, tc := range []struct {
		n int64
		p float64
	}{{40, 0.3}, {200, 0.4}, {5000, 0.02}, {1_000_000, 0.3}, {300, 0.85}, {30, 0.3}, {100, 0.105}, {1000, 0.0101}, {60, 0.82}, {550_000, 0.00027}, {2000, 0.075}, {400, 0.63}} {
		const draws = 40000
		obs := map[int64]float64{}
		for i := 0; i < draws; i++ {
			obs[BinomialSim(src, tc.n, tc.p)]++
		}
		d := distuv.Binomial{N: float64(tc.n), P: tc.p}
		mean, sd := float64(tc.n)*tc.p, math.Sqrt(float64(tc.n)*tc.p*(1-tc.p))
		lo, hi := int64(math.Max(0, math.Floor(mean-8*sd))), int64(math.Min(float64(tc.n), math.Ceil(mean+8*sd)))
		// the support's cells, then the tails beyond +-8 sd as one cell
		var o, e []float64
		seen := 0.0
		for k := lo; k <= hi; k++ {
			o, e = append(o, obs[k]), append(e, draws*d.Prob(float64(k)))
			seen += obs[k]
		}
		o, e = append(o, draws-seen), append(e, draws*(d.CDF(float64(lo)-0.5)+1-d.CDF(float64(hi)+0.5)))
		chi, df := stattest.PooledChiSquare(o, e)
		crit := stattest.ChiSquareCritical(df, 0.001)
		t.Logf("n %d p %v: chi-square %.1f on %d df (0.999 quantile %.1f)", tc.n, tc.p, chi, df, crit)
		if chi > crit {
			t.Errorf("n %d p %v: chi-square %.1f > %.1f", tc.n, tc.p, chi, crit)
		}
	}
}

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
			x := binomial(src, tc.n, tc.p, math.NaN())
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

// stirlingTail is the correction of Stirling's formula: against log-gamma
// (whose rounding at these sizes is below 1e-12) up to k = 300, across the
// switch from its table to its series.
func TestStirlingTail(t *testing.T) {
	for k := 0; k <= 300; k++ {
		x := float64(k)
		lg, _ := math.Lgamma(x + 1)
		want := lg - ((x+0.5)*math.Log(x+1) - (x + 1) + 0.5*math.Log(2*math.Pi))
		if got := stirlingTail(x); math.Abs(got-want) > 1e-12 {
			t.Errorf("k %d: %v, log-gamma gives %v", k, got, want)
		}
	}
}

// NewBinomialProb(p).Sim draws what BinomialSim(src, n, p) draws, word for
// word: the same values and the same stream left behind, over the
// branches (no draw, waiting times, BTRS, gonum's rejection unused here)
// and the probabilities above 1/2 that both flip.
func TestBinomialProbMatchesBinomialSim(t *testing.T) {
	ps := []float64{0, 1e-9, 0.001, 0.02, 0.3, 0.5, 0.5000001, 0.7, 0.97, 0.999, 1, 1.5, -0.1, math.NaN()}
	ns := []int64{-3, 0, 1, 2, 7, 40, 300, 5000, 1 << 40}
	a := rand.NewChaCha8([32]byte{7})
	b := rand.NewChaCha8([32]byte{7})
	for rep := 0; rep < 20; rep++ {
		for _, p := range ps {
			bp := NewBinomialProb(p)
			for _, n := range ns {
				x, y := BinomialSim(a, n, p), bp.Sim(b, n)
				if x != y || a.Uint64() != b.Uint64() {
					t.Fatalf("Binomial(%d, %v): BinomialSim %d, BinomialProb %d (or their streams differ)", n, p, x, y)
				}
			}
		}
	}
}
