package aggregators_test

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
)

// asyncEngine is an engine over a fresh in-memory ledger.
func asyncEngine(t *testing.T, async bool, clock *fakeClock, fits *captureSink, aggs ...aggregators.Config) (*aggregators.Engine, *ledger.Ledger) {
	t.Helper()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	l, err := ledger.Open(ctx, &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 1e6}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{
		Aggregates: aggs, Topic: "in", Ledger: l, State: &ledger.MemoryState{}, Fits: fits, Clock: clock,
		Noise: dp.NewSeededSource(7), Metrics: aggregators.NewMetrics(reg), AsyncFits: async,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, l
}

// tickUntilPublished ticks (waiting for the running fits in between) until
// the sink holds want messages.
func tickUntilPublished(t *testing.T, e *aggregators.Engine, fits *captureSink, want int) {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		if _, err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if len(fits.Messages()) >= want {
			return
		}
		if err := e.WaitFits(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("%d messages published, want %d", len(fits.Messages()), want)
}

// With AsyncFits the closing Tick starts the fit and returns; the release
// (one aggregate, the same seed) is byte for byte the synchronous one.
func TestAsyncFitsMatchSync(t *testing.T) {
	t.Parallel()
	wb := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, WindowSize: time.Minute, Epsilon: 1,
		Cohorts: cohorts, TimeMax: 100, TimeUnit: "days"}
	for _, cfg := range []aggregators.Config{kmConfig("km", time.Minute, 1), wb} {
		t.Run(cfg.Name, func(t *testing.T) {
			t.Parallel()
			var out [2][]string
			for k, async := range []bool{false, true} {
				clock := newClock(at(1))
				fits := &captureSink{}
				e, _ := asyncEngine(t, async, clock, fits, cfg)
				rec := canonical(t, rowsOf("p", 500))
				if err := e.Observe(0, 0, rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
				clock.Set(at(61))
				if _, err := e.Tick(context.Background()); err != nil {
					t.Fatal(err)
				}
				if async {
					if n := len(fits.Messages()); n != 0 || e.Pending() != 1 {
						t.Fatalf("async: %d messages and %d pending after the closing tick, want 0 and 1", n, e.Pending())
					}
				}
				tickUntilPublished(t, e, fits, len(cohorts))
				for _, m := range fits.Messages() {
					out[k] = append(out[k], string(m.Key)+" "+string(m.Value))
				}
			}
			if !reflect.DeepEqual(out[0], out[1]) {
				t.Errorf("async release differs from the synchronous one:\n%v\n%v", out[0], out[1])
			}
		})
	}
}

// Two aggregates closing together: their fits run at once with the same
// budget snapshot; the one recorded second sees a changed budget, is
// discarded unpublished and fitted again, so every release states the
// budget that remained after its own charge.
func TestAsyncFitsBudgetStaysExact(t *testing.T) {
	t.Parallel()
	clock := newClock(at(1))
	fits := &captureSink{}
	e, l := asyncEngine(t, true, clock, fits, kmConfig("k1", time.Minute, 1), kmConfig("k2", time.Minute, 2))
	rec := canonical(t, rowsOf("p", 200))
	if err := e.Observe(0, 0, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	clock.Set(at(61))
	tickUntilPublished(t, e, fits, 2*len(cohorts))
	got := fits.fits(t)
	rem := map[string]float64{}
	for _, m := range got {
		rem[m.Aggregate] = m.BudgetRemaining["stream"]
	}
	if r, _ := l.Remaining("stream"); r != 1e6-3 {
		t.Fatalf("ledger remaining %v, want %v", r, 1e6-3)
	}
	// Whichever was recorded first states 1e6 - its epsilon, the second
	// 1e6 - 3.
	ok := (rem["k1"] == 1e6-1 && rem["k2"] == 1e6-3) || (rem["k2"] == 1e6-2 && rem["k1"] == 1e6-3)
	if !ok || math.IsNaN(rem["k1"]) {
		t.Errorf("stated remaining budgets %v", rem)
	}
}
