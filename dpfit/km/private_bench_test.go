package km

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/benchtest"
	"github.com/dpsurv/dpsurv/survival"
)

// Private fits beside their non-private twins on the same 1 M records, run
// in turn in every iteration so that the ratio private ÷ non-private comes
// from one run and holds when the machine's speed drifts (issue 24: every
// private fit within 3x of its twin). Each reports exact-ms/op and
// private-ms/op (wall), exact-cpu-ms/op and private-cpu-ms/op (the
// process's CPU while each ran) and the ratios private/exact (wall) and
// private/exact-cpu. The data are generated here (nothing large is
// committed):
//
//	go test -run XXX -bench 'PrivateVsExact' -benchtime 3x ./dpfit/km

// BenchmarkKMPrivateVsExact1M: the private KM of `dpsurv fit km --epsilon
// 1` (HierarchicalKM at the defaults: its noise-aware intervals and bands
// and the calibrated log-rank with its null simulations), from the
// records (histogram build included), beside the non-private KM of
// `--epsilon inf` (survival.KaplanMeier per cohort with Greenwood
// intervals, the log-rank test and the pairwise tests). 1 M records, 3
// cohorts, integer days in [0, 3650), time max 3650 (bins of 24.3 days,
// the CLI's default time max / 150).
func BenchmarkKMPrivateVsExact1M(b *testing.B) {
	const cohorts = 3
	tm, ev, co := benchRecords(1_000_000, cohorts)
	for i := range tm {
		tm[i] = math.Mod(tm[i], 3650)
	}
	src := dp.NewSeededSource(1)
	exact := func() error {
		for k := range cohorts {
			var tt []float64
			var ee []bool
			for i := range tm {
				if co[i] == k {
					tt = append(tt, tm[i])
					ee = append(ee, ev[i])
				}
			}
			if _, err := survival.KaplanMeier(tt, ee, 0.95); err != nil {
				return err
			}
		}
		if _, err := survival.LogRankTest(tm, ev, co, cohorts); err != nil {
			return err
		}
		_, err := survival.PairwiseLogRank(tm, ev, co, cohorts)
		return err
	}
	private := func() error {
		h, err := NewHistogram(3650.0/150, 3650, cohorts)
		if err != nil {
			return err
		}
		for i := range tm {
			if err := h.Add(tm[i], ev[i], co[i]); err != nil {
				return err
			}
		}
		_, err = HierarchicalKM(h, src, KMOptions{Epsilon: 1})
		return err
	}
	benchtest.PairedRatio(b, exact, private)
}
