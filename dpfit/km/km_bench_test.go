package km

import (
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func benchRecords(n, cohorts int) (time []float64, event []bool, cohort []int) {
	src := dp.NewSeededSource(42)
	time = make([]float64, n)
	event = make([]bool, n)
	cohort = make([]int, n)
	for i := range time {
		time[i] = float64(dp.Uint64n(src, 5000))
		event[i] = dp.Uint64n(src, 10) < 3
		cohort[i] = int(dp.Uint64n(src, uint64(cohorts)))
	}
	return time, event, cohort
}

// BenchmarkDPKM1M: one million records, 4 cohorts, unit bins over 5000 days
// (40,000 cells): histogram build, noise on every cell, post-processing,
// curves and log-rank tests.
func BenchmarkDPKM1M(b *testing.B) {
	benchKM1M(b, NoisyHistogramKM)
}

// benchKM1M times fit from the records: one million records, 4 cohorts,
// histogram build included; it reports the histogram's state per record.
func benchKM1M(b *testing.B, fit func(*Histogram, dp.Source, KMOptions) (KMResult, error)) {
	time, event, cohort := benchRecords(1_000_000, 4)
	src := dp.NewSeededSource(1)
	var mem int
	for b.Loop() {
		h := benchHistogram(b, time, event, cohort)
		if _, err := fit(h, src, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1}); err != nil {
			b.Fatal(err)
		}
		mem = h.MemoryBytes()
	}
	b.ReportMetric(float64(mem)/float64(len(time)), "state-bytes/record")
}

// benchHistogram holds the records in unit bins over 5000 days, 4 cohorts.
func benchHistogram(b *testing.B, time []float64, event []bool, cohort []int) *Histogram {
	b.Helper()
	h, err := NewHistogram(1, 4999, 4)
	if err != nil {
		b.Fatal(err)
	}
	for i := range time {
		if err := h.Add(time[i], event[i], cohort[i]); err != nil {
			b.Fatal(err)
		}
	}
	return h
}

// BenchmarkHistogramAdd is the aggregator's per-record cost; its state is
// 16 bytes per (cohort, bin) whatever the number of records.
func BenchmarkHistogramAdd(b *testing.B) {
	time, event, cohort := benchRecords(1<<16, 4)
	h, err := NewHistogram(1, 4999, 4)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if err := h.Add(time[i], event[i], cohort[i]); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) & (1<<16 - 1)
	}
	b.ReportMetric(float64(h.MemoryBytes())/float64(b.N), "state-bytes/record")
}

// BenchmarkContinualRelease: one window of the continual KM (4 cohorts,
// 5000 bins, 2 x 20,000 cells, horizon 365).
func BenchmarkContinualRelease(b *testing.B) {
	time, event, cohort := benchRecords(10_000, 4)
	src := dp.NewSeededSource(1)
	var ck *ContinualKM
	var win *Histogram
	for b.Loop() {
		if ck == nil || ck.Releases() == ck.Horizon() {
			b.StopTimer()
			var err error
			if ck, err = NewContinualKM(1, 4999, 4, 365, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1}); err != nil {
				b.Fatal(err)
			}
			if win, err = ck.NewWindow(); err != nil {
				b.Fatal(err)
			}
			for i := range time {
				if err := win.Add(time[i], event[i], cohort[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		if _, err := ck.Release(src, win); err != nil {
			b.Fatal(err)
		}
	}
}
