package aggregators_test

import (
	"context"
	"math"
	"reflect"
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

// discCfg is a discrete-time aggregate on covariate x0.
func discCfg(name string, eps float64) aggregators.Config {
	x := []string{"x0"}
	return aggregators.Config{Name: name, Kind: aggregators.KindDiscrete, Window: aggregators.Window{Size: time.Minute}, Epsilon: eps,
		Cohorts: cohorts, TimeMax: 9, TimeUnit: "days", Covariates: x,
		Params: aggregators.DiscreteParams{Method: "output", Covariates: x, Centre: []float64{0}, Scale: []float64{1}}}
}

// discRecord is n rows of rowsOf with covariate x0 in [-1, 1].
func discRecord(t *testing.T, n int) arrow.Record {
	t.Helper()
	rows := rowsOf("p", n)
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i%21)/10 - 1
	}
	rows.Covariates = [][]float64{x}
	sp := spec()
	sp.Covariates = []string{"x0"}
	rec, err := schemas.BuildCanonical(sp, rows, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// asyncEngine is an engine over a fresh in-memory ledger.
func asyncEngine(t *testing.T, async bool, clock *pipelinetest.Clock, fits *captureSink, aggs ...aggregators.Config) (*aggregators.Engine, *ledger.Ledger) {
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

// With AsyncFits the closing Tick starts a discrete window's fit and
// returns; the release (the same seed) is byte for byte the synchronous
// one (a discrete and a km window).
func TestAsyncFitsMatchSync(t *testing.T) {
	t.Parallel()
	for _, cfg := range []aggregators.Config{discCfg("dt", 1), kmConfig("km", time.Minute, 1)} {
		t.Run(cfg.Name, func(t *testing.T) {
			t.Parallel()
			var out [2][]string
			for k, async := range []bool{false, true} {
				clock := newClock(at(1))
				fits := &captureSink{}
				e, _ := asyncEngine(t, async, clock, fits, cfg)
				rec := discRecord(t, 500)
				if err := e.Observe(0, 0, rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
				clock.Set(at(61))
				if _, err := e.Tick(context.Background()); err != nil {
					t.Fatal(err)
				}
				want := len(cohorts)
				if cfg.Kind == aggregators.KindDiscrete {
					want = 1
					if n := len(fits.Messages()); async && (n != 0 || e.Pending() != 1) {
						t.Fatalf("async: %d messages and %d pending after the closing tick, want 0 and 1", n, e.Pending())
					}
				}
				tickUntilPublished(t, e, fits, want)
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
	e, l := asyncEngine(t, true, clock, fits, discCfg("k1", 1), discCfg("k2", 2))
	rec := discRecord(t, 200)
	if err := e.Observe(0, 0, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	clock.Set(at(61))
	tickUntilPublished(t, e, fits, 2)
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
