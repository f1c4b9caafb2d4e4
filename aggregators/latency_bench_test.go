package aggregators_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
)

// BenchmarkReleaseLatency: the time from the Tick that closes a window of
// n records to its fit messages in the fit sink, with the service's
// AsyncFits (discrete fits on their own goroutine, km and Weibull inline;
// Tick called every millisecond here, every 250 ms in the service), for km
// (hierarchical), weibull (LSP) and discrete (output perturbation, 5
// covariates, max_records = n) windows, and a pSGLD window of 10,000
// records (default chain: 250 data passes). tick-max-ms is the longest
// Tick call: what the intake waited at most (the checkpoint of the closing
// window included).
func BenchmarkReleaseLatency(b *testing.B) {
	names := make([]string, benchCovs)
	centre, scale := make([]float64, benchCovs), make([]float64, benchCovs)
	for j := range names {
		names[j], scale[j] = fmt.Sprintf("x%d", j), 1
	}
	for _, kind := range []string{"km", "weibull", "discrete", "psgld"} {
		for _, n := range []int{10_000, 100_000, 1_000_000} {
			if kind == "psgld" && n > 10_000 {
				continue // 250 data passes: seconds per 10,000 records
			}
			b.Run(fmt.Sprintf("%s/records=%d", kind, n), func(b *testing.B) {
				recs := discBenchRecords(b, n, 10_000) // distinct patients: a window keeps one record per patient
				cfg := aggregators.Config{Name: kind, Window: aggregators.Window{Size: time.Hour}, Epsilon: 1, Cohorts: cohorts, TimeMax: 3650, TimeUnit: "days"}
				switch kind {
				case "km":
					cfg.Kind = aggregators.KindKM
				case "weibull":
					cfg.Kind = aggregators.KindWeibull
				case "discrete", "psgld":
					method := "output"
					if kind == "psgld" {
						method = "psgld"
					}
					cfg.Kind = aggregators.KindDiscrete
					cfg.Covariates = names
					cfg.Params = aggregators.DiscreteParams{Method: method, Covariates: names, Centre: centre, Scale: scale, MaxRecords: n}
				}
				var total, tickMax time.Duration
				for range b.N {
					ctx := context.Background()
					l, err := ledger.Open(ctx, &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 1e9}})
					if err != nil {
						b.Fatal(err)
					}
					clock := newClock(base.Add(time.Second))
					fits := &captureSink{}
					e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{Aggregates: []aggregators.Config{cfg}, Topic: "in",
						Ledger: l, State: &ledger.MemoryState{}, Fits: fits, Clock: clock, AsyncFits: true,
						Noise: dp.NewSecureSource(), Metrics: aggregators.NewMetrics(prometheus.NewRegistry())})
					if err != nil {
						b.Fatal(err)
					}
					for off, rec := range recs {
						if err := e.Observe(0, int64(off), rec); err != nil {
							b.Fatal(err)
						}
					}
					clock.Set(base.Add(time.Hour + time.Second))
					start := time.Now()
					for len(fits.Messages()) == 0 {
						t0 := time.Now()
						if _, err := e.Tick(ctx); err != nil {
							b.Fatal(err)
						}
						tickMax = max(tickMax, time.Since(t0))
						if len(fits.Messages()) == 0 {
							time.Sleep(time.Millisecond)
						}
						if time.Since(start) > 10*time.Minute {
							b.Fatal("no release in 10 minutes")
						}
					}
					total += time.Since(start)
				}
				b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "close-to-fit-ms")
				b.ReportMetric(float64(tickMax.Microseconds())/1000, "tick-max-ms")
			})
		}
	}
}
