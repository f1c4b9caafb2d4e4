package km

import (
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// BenchmarkHierarchicalKM1M: as BenchmarkDPKM1M — one million records, 4
// cohorts, unit bins over 5000 days — with HierarchicalKM: histogram build,
// 2 x 4 trees of 5 levels (5336 nodes each) of noise, the consistent trees,
// post-processing with the correlated-noise model, curves and log-rank
// tests.
func BenchmarkHierarchicalKM1M(b *testing.B) {
	benchKM1M(b, HierarchicalKM)
}

// BenchmarkHierarchicalKMRelease is the release alone (the histogram of 1M
// records is built once), against BenchmarkNoisyHistogramKMRelease.
func BenchmarkHierarchicalKMRelease(b *testing.B) {
	benchRelease(b, HierarchicalKM)
}

func BenchmarkNoisyHistogramKMRelease(b *testing.B) {
	benchRelease(b, NoisyHistogramKM)
}

func benchRelease(b *testing.B, fit func(*Histogram, dp.Source, KMOptions) (KMResult, error)) {
	time, event, cohort := benchRecords(1_000_000, 4)
	h := benchHistogram(b, time, event, cohort)
	src := dp.NewSeededSource(1)
	for b.Loop() {
		if _, err := fit(h, src, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
