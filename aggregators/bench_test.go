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
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
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
				km := aggregators.Config{Name: "km", Kind: aggregators.KindKM, Window: aggregators.Window{Size: time.Hour}, Epsilon: 1,
					Cohorts: cohorts3, TimeMax: 3650, TimeUnit: "days"}
				perRecord, state = retained(b, benchEngine(b, newClock(base), km), recs, n)
			}
			b.ReportMetric(perRecord, "bytes/record")
			b.ReportMetric(state, "state-bytes")
			b.ReportMetric(float64(n), "records")
		})
	}
}

// benchEngine is an engine of the one aggregate cfg over an in-memory
// ledger (a budget no benchmark exhausts) and state.
func benchEngine(b *testing.B, clock *pipelinetest.Clock, cfg aggregators.Config) *aggregators.Engine {
	b.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 1e9}})
	if err != nil {
		b.Fatal(err)
	}
	e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{Aggregates: []aggregators.Config{cfg}, Topic: "in",
		Ledger: l, State: &ledger.MemoryState{}, Fits: &captureSink{}, Clock: clock,
		Noise: dp.NewSeededSource(1), Metrics: aggregators.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// retained observes the first n rows of recs into e and returns the heap
// the engine retains per record and its state bytes.
func retained(b *testing.B, e *aggregators.Engine, recs []arrow.Record, n int) (perRecord, state float64) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rows := int(recs[0].NumRows())
	for off := 0; off < len(recs) && off*rows < n; off++ {
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

// benchCovs is the number of model covariates of the discrete benchmarks.
const benchCovs = 5

// discBenchRecords returns ceil(n/batch) records of batch rows whose ids are
// all distinct (p0 ... p<n-1>): a window keeps one record per patient, so a
// batch observed again would only replace its own patients. They are
// released at the end of the benchmark.
func discBenchRecords(b *testing.B, n, batch int) []arrow.Record {
	b.Helper()
	var recs []arrow.Record
	for base := 0; base < n; base += batch {
		recs = append(recs, discBenchRecordFrom(b, batch, base))
	}
	b.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs
}

// discBenchRecordFrom builds n records with ids p<base> ... p<base+n-1>.
func discBenchRecordFrom(b *testing.B, n, base int) arrow.Record {
	b.Helper()
	names := make([]string, benchCovs)
	for j := range names {
		names[j] = fmt.Sprintf("x%d", j)
	}
	sp := schemas.Spec{Cohorts: cohorts, TimeUnit: "days", Covariates: names, Columns: schemas.DefaultColumns()}
	src := dp.NewSeededSource(uint64(1 + base))
	var rows schemas.Rows
	rows.Covariates = make([][]float64, benchCovs)
	for i := range n {
		rows.ID = append(rows.ID, fmt.Sprintf("p%d", base+i))
		rows.Time = append(rows.Time, float64(1+(i*7919)%3650))
		rows.Event = append(rows.Event, i%4 != 0)
		rows.Cohort = append(rows.Cohort, int32(i%2))
		for j := range rows.Covariates {
			rows.Covariates[j] = append(rows.Covariates[j], 2*dp.Float64(src)-1)
		}
	}
	rec, err := schemas.BuildCanonical(sp, rows, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	return rec
}

func discBenchEngine(b *testing.B, method string, clock *pipelinetest.Clock) *aggregators.Engine {
	b.Helper()
	names := make([]string, benchCovs)
	centre, scale := make([]float64, benchCovs), make([]float64, benchCovs)
	for j := range names {
		names[j], scale[j] = fmt.Sprintf("x%d", j), 1
	}
	return benchEngine(b, clock, aggregators.Config{Name: "dt", Kind: aggregators.KindDiscrete, Window: aggregators.Window{Size: time.Hour}, Epsilon: 1,
		Cohorts: cohorts, TimeMax: 3650, TimeUnit: "days", Covariates: names,
		Params: aggregators.DiscreteParams{Method: method, Covariates: names, Centre: centre, Scale: scale}})
}

// BenchmarkDiscreteBytesPerRecord feeds N records (5 covariates) into one
// open window of a discrete aggregate and reports the heap the engine
// retains per record and its state bytes per record: 4 + 4 x 5 = 24 bytes
// of state, plus the slack of geometric growth (capped at max_records).
func BenchmarkDiscreteBytesPerRecord(b *testing.B) {
	const batch = 10_000
	for _, n := range []int{10_000, 100_000, 200_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			recs := discBenchRecords(b, n, batch)
			var perRecord, state float64
			for range b.N {
				perRecord, state = retained(b, discBenchEngine(b, "output", newClock(base)), recs, n)
			}
			state /= float64(n)
			b.ReportMetric(perRecord, "bytes/record")
			b.ReportMetric(state, "state-bytes/record")
		})
	}
}

// BenchmarkDiscreteWindowRelease is the cost of closing one window of N
// records (q = 200, 3 knots, 5 covariates): the Tick that fits and
// releases it, which holds up the aggregators' input meanwhile.
func BenchmarkDiscreteWindowRelease(b *testing.B) {
	const batch = 10_000
	for _, tc := range []struct {
		method string
		n      int
	}{{"output", 10_000}, {"output", 200_000}, {"objective", 200_000}, {"psgld", 10_000}} {
		b.Run(fmt.Sprintf("%s/records=%d", tc.method, tc.n), func(b *testing.B) {
			recs := discBenchRecords(b, tc.n, batch)
			for range b.N {
				b.StopTimer()
				clock := newClock(base)
				e := discBenchEngine(b, tc.method, clock)
				for off, rec := range recs {
					if err := e.Observe(0, int64(off), rec); err != nil {
						b.Fatal(err)
					}
				}
				clock.Set(base.Add(time.Hour))
				b.StartTimer()
				if _, err := e.Tick(context.Background()); err != nil {
					b.Fatal(err)
				}
				if e.Pending() != 0 {
					b.Fatal("window not released")
				}
			}
		})
	}
}
