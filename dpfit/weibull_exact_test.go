package dpfit

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsurv/dpsurv/dp"
)

// gridLogProb returns the exact log-probability that Sample outputs grid
// index i: -(rung(i)) e - ln sum_k count_k exp(-k e), e = epsilon/4 rounded
// down as Sample rounds it.
func gridLogProb(t testing.TB, l WeibullLadder, eps float64) func(i int64) float64 {
	t.Helper()
	num, den, err := dp.RationalDown(eps / 4)
	if err != nil {
		t.Fatal(err)
	}
	e := float64(num) / float64(den)
	c := l.GridCounts()
	mx := math.Inf(-1)
	for k, n := range c {
		if n > 0 {
			mx = max(mx, math.Log(float64(n))-float64(k)*e)
		}
	}
	s := 0.0
	for k, n := range c {
		if n > 0 {
			s += math.Exp(math.Log(float64(n)) - float64(k)*e - mx)
		}
	}
	logZ := mx + math.Log(s)
	return func(i int64) float64 { return -float64(l.gridLevel(i))*e - logZ }
}

// maxGridLogRatio enumerates the released output space of two ladders — the
// grid indices, in segments between every interval end of either ladder,
// where both rungs are constant — and returns the largest
// |ln P_D(i) - ln P_D'(i)| of the exact sampled pmfs.
func maxGridLogRatio(t testing.TB, a, b WeibullLadder, eps float64) float64 {
	ends := []int64{0, int64(a.gridPoints())}
	for k := 1; k < len(a.Lower); k++ {
		lo, hi := a.gridEnds(k)
		ends = append(ends, lo, hi+1)
		lo, hi = b.gridEnds(k)
		ends = append(ends, lo, hi+1)
	}
	slices.Sort(ends)
	ends = slices.Compact(ends)
	pa, pb := gridLogProb(t, a, eps), gridLogProb(t, b, eps)
	worst := 0.0
	for _, i := range ends {
		if i < 0 || i >= int64(a.gridPoints()) {
			continue
		}
		worst = max(worst, math.Abs(pa(i)-pb(i)))
	}
	return worst
}

// TestWeibullLSPGridWorstCaseRatio: the pmf that Sample actually draws from
// (grid points, exact weights), enumerated over the whole output space,
// changes by at most exp(epsilon/2) between neighbouring data sets (one
// record replaced, including extreme replacements).
func TestWeibullLSPGridWorstCaseRatio(t *testing.T) {
	kid, kidMax := loadWB(t, "kidney")
	lung, lungMax := loadWB(t, "lung")
	src := dp.NewSeededSource(17)
	for _, tc := range []struct {
		name string
		r    wbRecords
		tmax float64
		tol  float64
	}{{"kidney", kid, kidMax, 1e-9}, {"lung coarse grid", lung, lungMax, 1e-3}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{TimeMax: tc.tmax, Rungs: 80, Tolerance: tc.tol}.WithDefaults()
			base := wbLadder(t, tc.r.compress(), cfg)
			worstSeen := 0.0
			for w := 0; w < 6; w++ {
				i := int(dp.Uint64n(src, uint64(len(tc.r.time))))
				for _, x := range extremeRecords(tc.tmax) {
					v := tc.r.clone()
					v.time[i], v.event[i] = x.t, x.d
					nb := wbLadder(t, v.compress(), cfg)
					for _, eps := range []float64{0.1, 1, 4, 16} {
						lr := maxGridLogRatio(t, base, nb, eps)
						if lr > eps/2+1e-9 {
							t.Fatalf("record %d -> %+v, eps %v: ln ratio of the sampled pmf %v > eps/2", i, x, eps, lr)
						}
						worstSeen = max(worstSeen, lr/(eps/2))
					}
				}
			}
			t.Logf("worst ln-ratio / (eps/2) = %.4f", worstSeen)
		})
	}
}

// TestWeibullLSPSampleOnGrid: every released shape is a multiple of the
// public grid (the old sampler drew a float uniformly inside the rung).
func TestWeibullLSPSampleOnGrid(t *testing.T) {
	kid, kidMax := loadWB(t, "kidney")
	cfg := WeibullConfig{TimeMax: kidMax, Rungs: 30, Tolerance: 1.0 / 1024}.WithDefaults()
	lad := wbLadder(t, kid.compress(), cfg)
	src := dp.NewSeededSource(3)
	for r := 0; r < 500; r++ {
		p, err := lad.Sample(src, 1)
		if err != nil {
			t.Fatal(err)
		}
		if q := p / cfg.Tolerance; q != math.Trunc(q) || p < 0 || p > cfg.Gamma {
			t.Fatalf("shape %v is not on the grid of step %v in [0, %v]", p, cfg.Tolerance, cfg.Gamma)
		}
	}
}

// TestWeibullLSPSampleExactPMF: on a small hand-made ladder (11 grid
// points), the draws of Sample match the exact pmf exp(-rung e)/Z point by
// point (chi-square, seeded, false-alarm rate 1e-4 per case).
func TestWeibullLSPSampleExactPMF(t *testing.T) {
	lad := WeibullLadder{
		Lower: []float64{math.NaN(), 4, 3, 0, 0},
		Upper: []float64{math.NaN(), 5, 7, 8, 10},
		Gamma: 10, Grid: 1,
	}
	const draws = 60000
	for _, tc := range []struct {
		eps  float64
		seed uint64
	}{{0.5, 1}, {4, 2}, {10, 3}} {
		src := dp.NewSeededSource(tc.seed)
		lp := gridLogProb(t, lad, tc.eps)
		obs := make([]float64, 11)
		for r := 0; r < draws; r++ {
			p, err := lad.Sample(src, tc.eps)
			if err != nil {
				t.Fatal(err)
			}
			obs[int(p)]++
		}
		var chi float64
		cells := 0
		var pe, po float64
		for i := range obs {
			e := math.Exp(lp(int64(i))) * draws
			if e < 5 {
				pe += e
				po += obs[i]
				continue
			}
			chi += (obs[i] - e) * (obs[i] - e) / e
			cells++
		}
		if pe > 0 {
			chi += (po - pe) * (po - pe) / max(pe, 1)
			cells++
		}
		if pv := 1 - (distuv.ChiSquared{K: float64(cells - 1)}).CDF(chi); pv < 1e-4 {
			t.Fatalf("eps %v: chi-square %v on %d cells, p = %v", tc.eps, chi, cells, pv)
		}
	}
}
