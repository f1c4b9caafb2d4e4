package survival

import (
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// benchRecords draws n records with integer times in [0, 5000) days, about
// 30% events, in g groups, from a seeded source.
func benchRecords(n, g int, integer bool) (time []float64, event []bool, group []int) {
	src := dp.NewSeededSource(42)
	time = make([]float64, n)
	event = make([]bool, n)
	group = make([]int, n)
	for i := range time {
		if integer {
			time[i] = float64(dp.Uint64n(src, 5000))
		} else {
			time[i] = 5000 * dp.Float64(src)
		}
		event[i] = dp.Uint64n(src, 10) < 3
		group[i] = int(dp.Uint64n(src, uint64(g)))
	}
	return time, event, group
}

func BenchmarkKaplanMeier1M(b *testing.B) {
	benchTimeKinds(b, 1, func(time []float64, event []bool, _ []int) error {
		_, err := KaplanMeier(time, event, 0.95)
		return err
	})
}

func BenchmarkLogRank1M(b *testing.B) {
	benchTimeKinds(b, 4, func(time []float64, event []bool, group []int) error {
		_, err := LogRankTest(time, event, group, 4)
		return err
	})
}

// benchTimeKinds benchmarks run on 1M records in the given number of
// groups (benchRecords), in the sub-benchmarks "integer" (integer days)
// and "float" (distinct float times).
func benchTimeKinds(b *testing.B, groups int, run func(time []float64, event []bool, group []int) error) {
	for _, bc := range []struct {
		name    string
		integer bool
	}{{"integer", true}, {"float", false}} {
		b.Run(bc.name, func(b *testing.B) {
			time, event, group := benchRecords(1_000_000, groups, bc.integer)
			b.ResetTimer()
			for b.Loop() {
				if err := run(time, event, group); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
