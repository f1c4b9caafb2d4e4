package aggregators_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
)

// cutReadBack is a tailing ledger backend whose first read-back after an
// append fails as a stop cuts it short: the entry is persisted (charged),
// but the ledger cannot tell the engine so.
type cutReadBack struct {
	ledger.Memory
	mu             sync.Mutex
	seen           int
	cutNext, spent bool
}

func (b *cutReadBack) Load(ctx context.Context) ([]ledger.Entry, error) {
	es, err := b.Memory.Load(ctx)
	b.mu.Lock()
	b.seen = len(es)
	b.mu.Unlock()
	return es, err
}

func (b *cutReadBack) Append(ctx context.Context, e ledger.Entry) error {
	if err := b.Memory.Append(ctx, e); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.spent {
		b.cutNext, b.spent = true, true
	}
	return nil
}

func (b *cutReadBack) Tail(ctx context.Context) ([]ledger.Entry, error) {
	b.mu.Lock()
	cut := b.cutNext
	b.cutNext = false
	b.mu.Unlock()
	if cut {
		return nil, context.Canceled
	}
	es, err := b.Memory.Load(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	news := es[b.seen:]
	b.seen = len(es)
	return news, err
}

// A window whose release was appended to the ledger but whose read-back a
// stop cut short is charged; Drain finds it in the ledger and publishes
// it, without building or charging anything (TestAggregatorsBrokerRestart
// once stopped with such a window charged and never published).
func TestDrainPublishesAWindowChargedBeforeTheStop(t *testing.T) {
	ctx := context.Background()
	backend := &cutReadBack{}
	reg := prometheus.NewRegistry()
	l, err := ledger.Open(ctx, backend, ledger.Options{Budget: map[string]float64{"stream": 100}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock(at(0))
	fits := &captureSink{}
	e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{
		Aggregates: []aggregators.Config{kmConfig("km", 5*time.Second, 1)}, Topic: "in", Ledger: l,
		State: &ledger.MemoryState{}, Fits: fits, Clock: clock, Noise: dp.NewSeededSource(3), Metrics: aggregators.NewMetrics(reg),
	})
	if err != nil {
		t.Fatal(err)
	}
	observeWindow(t, e, clock, 0, 40)
	// Close the window and checkpoint it, then release it: the read-back
	// is cut. The stop comes before the Tick that would retry.
	for i := 0; ; i++ {
		if entries, _ := backend.Memory.Load(ctx); len(entries) == 1 {
			break
		}
		if i == 5 {
			t.Fatal("no charge after 5 ticks")
		}
		if _, err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fits.Messages()); n != 0 {
		t.Fatalf("published %d messages before the drain; the read-back was cut, so none is known as released", n)
	}
	if err := e.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	got := fits.fits(t)
	if len(got) != len(cohorts) {
		t.Fatalf("drain published %d fit messages, want one per cohort (%d)", len(got), len(cohorts))
	}
	after, _ := backend.Memory.Load(ctx)
	if len(after) != 1 {
		t.Fatalf("ledger entries after the drain %d, want still the one charge", len(after))
	}
}
