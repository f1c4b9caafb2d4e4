package weibull

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/stattest"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
		exp := make([]float64, len(obs))
		for i := range exp {
			exp[i] = math.Exp(lp(int64(i))) * draws
		}
		chi, df := stattest.PooledChiSquare(obs, exp)
		if pv := 1 - (distuv.ChiSquared{K: float64(df)}).CDF(chi); pv < 1e-4 {
			t.Fatalf("eps %v: chi-square %v on %d df, p = %v", tc.eps, chi, df, pv)
		}
	}
}

// addRemoveNeighbours returns neighbours of r under add/remove-one: r plus
// each extreme record (and records at exp(-1/p), where t^p ln t is
// smallest), and r minus some records (sampled, plus the largest and the
// smallest time, an event and a censored record).
func addRemoveNeighbours(src dp.Source, r wbRecords, tmax float64, removals int) []wbRecords {
	var out []wbRecords
	add := extremeRecords(tmax)
	for _, p := range []float64{0.3, 1, 3} {
		add = append(add, struct {
			t float64
			d bool
		}{tmax * math.Exp(-1/p), false}, struct {
			t float64
			d bool
		}{tmax * math.Exp(-1/p), true})
	}
	for _, x := range add {
		v := r.clone()
		v.time = append(v.time, x.t)
		v.event = append(v.event, x.d)
		v.cohort = append(v.cohort, "")
		out = append(out, v)
	}
	idx := []int{}
	lo, hi := 0, 0
	for i := range r.time {
		if r.time[i] < r.time[lo] {
			lo = i
		}
		if r.time[i] > r.time[hi] {
			hi = i
		}
	}
	idx = append(idx, lo, hi)
	for i := range r.time {
		if r.event[i] {
			idx = append(idx, i)
			break
		}
	}
	for i := range r.time {
		if !r.event[i] {
			idx = append(idx, i)
			break
		}
	}
	for w := 0; w < removals; w++ {
		idx = append(idx, int(dp.Uint64n(src, uint64(len(r.time)))))
	}
	for _, i := range idx {
		v := r.clone()
		v.time = append(v.time[:i], v.time[i+1:]...)
		v.event = append(v.event[:i], v.event[i+1:]...)
		v.cohort = append(v.cohort[:i], v.cohort[i+1:]...)
		out = append(out, v)
	}
	return out
}

// lemma1Violation returns a description of the first p where
// hA_{k+1}(en) < hA_k(e) or hB_{k+1}(en) > hB_k(e), or "".
func lemma1Violation(e, en *weibullLadderEngine, ps []float64) string {
	pre := make([]float64, len(e.cutG))
	grp := make([]float64, len(e.cutG))
	preN := make([]float64, len(en.cutG))
	grpN := make([]float64, len(en.cutG))
	for _, p := range ps {
		s, nn := e.sums(p, pre, grp)
		sN, nnN := en.sums(p, preN, grpN)
		for k := 1; k <= e.kmax && k+1 <= en.kmax; k++ {
			a, aN := e.hA(k, p, s, nn), en.hA(k+1, p, sN, nnN)
			if aN < a-1e-12*max(1, math.Abs(a)) {
				return fmt.Sprintf("k=%d, p=%v: hA_{k+1}(D') = %v < hA_k(D) = %v", k, p, aN, a)
			}
			g, gN := e.cutOf[k], en.cutOf[k+1]
			b := e.hB(k, p, nn, pre[g]+e.cutR[k]*grp[g])
			bN := en.hB(k+1, p, nnN, preN[gN]+en.cutR[k+1]*grpN[gN])
			if bN > b+1e-12*max(1, math.Abs(b)) {
				return fmt.Sprintf("k=%d, p=%v: hB_{k+1}(D') = %v > hB_k(D) = %v", k, p, bN, b)
			}
		}
	}
	return ""
}

// TestWeibullLadderCapNeeded: with most events at time_max, M + k omega > 0
// for small k, and the paper's g_U^k = 1/p + (M + k omega)/(E + k) is then
// not monotone across neighbours: adding an event at exp(-omega) gives
// (M + k omega)/(E + k + 2) < (M + k omega)/(E + k), and hB_{k+1}(D')
// exceeds hB_k(D) (the old code failed here, under add/remove and
// replace-one alike). Capping the numerator at 0 — still an upper bound,
// since M'/E' <= 0 — restores the inequality.
func TestWeibullLadderCapNeeded(t *testing.T) {
	t.Parallel()
	var r wbRecords
	for i := 0; i < 50; i++ {
		tm, ev := 100.0, true
		if i >= 40 {
			tm, ev = 100*math.Exp(-0.01*float64(i-39)), i%2 == 0
		}
		r.time, r.event, r.cohort = append(r.time, tm), append(r.event, ev), append(r.cohort, "")
	}
	cfg := WeibullConfig{TimeMax: 100, Rungs: 30}.WithDefaults()
	ps := shapeGrid(cfg.Gamma, 1.1)
	nbs := addRemoveNeighbours(dp.NewSeededSource(3), r, 100, 3)
	for _, i := range []int{0, 45} { // replace-one: an event at time_max, a censored record
		for _, x := range extremeRecords(100) {
			v := r.clone()
			v.time[i], v.event[i] = x.t, x.d
			nbs = append(nbs, v)
		}
	}
	base := wbEngine(t, r, cfg)
	for j, v := range nbs {
		checkLemma1BothWays(t, fmt.Sprintf("neighbour %d", j), base, wbEngine(t, v, cfg), ps)
	}
}

// TestWeibullBoundsLemma1AddRemove: the ladder constraint's pointwise
// inequalities hA_{k+1}(D') >= hA_k(D) and hB_{k+1}(D') <= hB_k(D) hold for
// add/remove-one neighbours in both directions (D' = D plus or minus one
// record). This is what gives LSP its add/remove-one guarantee.
func TestWeibullBoundsLemma1AddRemove(t *testing.T) {
	t.Parallel()
	src := dp.NewSeededSource(23)
	for _, tc := range kidneyLung(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{TimeMax: tc.tmax, Rungs: 150}.WithDefaults()
			ps := shapeGrid(cfg.Gamma, 1.15)
			base := wbEngine(t, tc.r, cfg)
			pairs := 0
			for j, v := range addRemoveNeighbours(src, tc.r, tc.tmax, 6) {
				checkLemma1BothWays(t, fmt.Sprintf("neighbour %d", j), base, wbEngine(t, v, cfg), ps)
				pairs++
			}
			t.Logf("%d add/remove neighbours, both directions", pairs)
		})
	}
}

// TestWeibullLSPGridWorstCaseRatioAddRemove: the pmf Sample draws from
// changes by at most exp(epsilon/2) between add/remove-one neighbours,
// enumerated over the whole output space.
func TestWeibullLSPGridWorstCaseRatioAddRemove(t *testing.T) {
	t.Parallel()
	src := dp.NewSeededSource(29)
	for _, tc := range kidneyLung(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{TimeMax: tc.tmax, Rungs: 80}.WithDefaults()
			base := wbLadder(t, tc.r.compress(), cfg)
			worstSeen := 0.0
			for _, v := range addRemoveNeighbours(src, tc.r, tc.tmax, 4) {
				nb := wbLadder(t, v.compress(), cfg)
				for _, eps := range []float64{0.1, 1, 4, 16} {
					lr := maxGridLogRatio(t, base, nb, eps)
					if lr > eps/2+1e-9 {
						t.Fatalf("eps %v: ln ratio of the sampled pmf %v > eps/2", eps, lr)
					}
					worstSeen = max(worstSeen, lr/(eps/2))
				}
			}
			t.Logf("worst ln-ratio / (eps/2) = %.4f", worstSeen)
		})
	}
}
