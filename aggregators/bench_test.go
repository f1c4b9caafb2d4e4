package aggregators_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/schemas"
)

// BenchmarkAggregatorBytesPerRecord feeds N records of N distinct patients
// into one open window of a km aggregate (3 cohorts, time_max 3650 days,
// 1-day bins) and reports the heap the engine retains per record: one
// histogram of bins x cohorts cells (falling as 1/N per record) plus one
// patient-table entry per patient (constant per record).
func BenchmarkAggregatorBytesPerRecord(b *testing.B) {
	cohorts3 := []string{"A", "B", "C"}
	sp := schemas.Spec{Cohorts: cohorts3, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	const batch = 10_000
	var recs []arrow.Record
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for off := range 100 { // 1,000,000 distinct patients
		var rows schemas.Rows
		for i := range batch {
			rows.ID = append(rows.ID, fmt.Sprintf("p%d-%d", off, i))
			rows.Time = append(rows.Time, float64((i*7919)%3650))
			rows.Event = append(rows.Event, i%4 != 0)
			rows.Cohort = append(rows.Cohort, int32(i%3))
		}
		rows.Covariates = [][]float64{}
		rec, err := schemas.BuildCanonical(sp, rows, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, rec)
	}
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			var perRecord, state float64
			for range b.N {
				perRecord, state = retained(b, recs, n, cohorts3)
			}
			b.ReportMetric(perRecord, "bytes/record")
			b.ReportMetric(state, "state-bytes")
			b.ReportMetric(float64(n), "records")
		})
	}
}

func retained(b *testing.B, recs []arrow.Record, n int, cohorts []string) (perRecord, state float64) {
	b.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 10}})
	if err != nil {
		b.Fatal(err)
	}
	cfg := aggregators.Config{Name: "km", Kind: aggregators.KindKM, Window: aggregators.Window{Size: time.Hour}, Epsilon: 1,
		Cohorts: cohorts, TimeMax: 3650, TimeUnit: "days"}
	e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{Aggregates: []aggregators.Config{cfg}, Topic: "in",
		Ledger: l, State: &ledger.MemoryState{}, Fits: &captureSink{}, Clock: newClock(base),
		Noise: dp.NewSeededSource(1), Metrics: aggregators.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rows := int(recs[0].NumRows())
	for off := 0; off*rows < n; off++ {
		rec := recs[off]
		r := rec
		if (off+1)*rows > n {
			r = rec.NewSlice(0, int64(n-off*rows))
		}
		if err := e.Observe(0, int64(off), r); err != nil {
			b.Fatal(err)
		}
		if r != rec {
			r.Release()
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	state = float64(e.StateBytes())
	runtime.KeepAlive(e)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n), state
}
