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
	time, event, cohort := benchRecords(1_000_000, 4)
	src := dp.NewSeededSource(1)
	var mem int
	for b.Loop() {
		h, err := NewHistogram(1, 4999, 4)
		if err != nil {
			b.Fatal(err)
		}
		for i := range time {
			if err := h.Add(time[i], event[i], cohort[i]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := HierarchicalKM(h, src, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1}); err != nil {
			b.Fatal(err)
		}
		mem = h.MemoryBytes()
	}
	b.ReportMetric(float64(mem)/float64(len(time)), "state-bytes/record")
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
	h, err := NewHistogram(1, 4999, 4)
	if err != nil {
		b.Fatal(err)
	}
	for i := range time {
		if err := h.Add(time[i], event[i], cohort[i]); err != nil {
			b.Fatal(err)
		}
	}
	src := dp.NewSeededSource(1)
	for b.Loop() {
		if _, err := fit(h, src, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
