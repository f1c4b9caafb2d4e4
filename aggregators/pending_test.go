package aggregators_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
)

// blockingFits makes the release builds (the async fits) wait until
// released, counting them.
type blockingFits struct {
	mu      sync.Mutex
	started int
	gate    chan struct{}
}

func (b *blockingFits) build() error {
	b.mu.Lock()
	b.started++
	b.mu.Unlock()
	<-b.gate
	return nil
}

// Windows that close while an aggregate already holds max_pending_windows
// waiting for their fit are withheld unfitted with reason pending_limit
// and charged (their absence must not move later budget statements);
// pending windows are a gauge. Once the fits end the waiting windows are
// released.
func TestPendingWindowsBounded(t *testing.T) {
	bf := &blockingFits{gate: make(chan struct{})}
	t.Cleanup(aggregators.SetBuildFault(bf.build))
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	backend, state := &ledger.Memory{}, &ledger.MemoryState{}
	l, err := ledger.Open(ctx, backend, ledger.Options{Budget: map[string]float64{"stream": 100}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock(at(0))
	fits := &captureSink{}
	cfg := aggregators.EngineConfig{
		Aggregates: []aggregators.Config{wbConfig("weibull", 5*time.Second, 0.5)}, Topic: "in", Ledger: l, State: state,
		Fits: fits, Clock: clock, Noise: dp.NewSeededSource(3), Metrics: aggregators.NewMetrics(reg), AsyncFits: true,
		MaxConcurrentFits: 1, MaxPendingWindows: 2,
	}
	e, err := aggregators.NewEngine(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pending := func() float64 {
		return metric(t, reg, "dpsurv_aggregator_pending_windows", map[string]string{"aggregate": "weibull"})
	}
	for w := range 5 {
		observeWindow(t, e, clock, w, 100)
		if _, err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// w0 fitting (blocked), w1 waiting for a fit slot; w2, w3, w4 closed
	// over the limit: withheld, charged, their empty release published.
	if p := pending(); p != 2 {
		t.Errorf("pending windows gauge %v, want 2", p)
	}
	if got := metric(t, reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "weibull", "reason": aggregators.ReasonPendingLimit}); got != 3 {
		t.Errorf("withheld{reason=pending_limit} = %v, want 3", got)
	}
	if s := l.Spent("stream"); s != 1.5 {
		t.Errorf("stream spent %v, want 3 x 0.5 (withheld windows charged)", s)
	}
	for w := 2; w < 5; w++ {
		b, ok := l.Lookup(aggregators.WindowKey("weibull", at(5*w).Unix()))
		var doc struct {
			Withheld string `json:"withheld"`
		}
		if !ok || json.Unmarshal(b, &doc) != nil || doc.Withheld != aggregators.WithheldPendingLimit {
			t.Errorf("window %d: ledger entry %q, want withheld %q", w, b, aggregators.WithheldPendingLimit)
		}
	}
	if n := len(fits.Messages()); n != 0 {
		t.Errorf("%d messages published before any fit ended", n)
	}
	close(bf.gate)
	if err := e.WaitFits(ctx); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitFits(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if p := pending(); p != 0 {
		t.Errorf("pending windows gauge %v after the fits ended, want 0", p)
	}
	got := map[int64]bool{}
	for _, f := range fits.fits(t) {
		got[f.WindowStartUnix] = true
	}
	if len(got) != 2 || !got[at(0).Unix()] || !got[at(5).Unix()] {
		t.Errorf("released windows %v, want the two that waited", got)
	}
	if s := l.Spent("stream"); s != 2.5 {
		t.Errorf("stream spent %v, want 5 x 0.5", s)
	}
}

// An asynchronous window the budget no longer admits is withheld
// (budget_exceeded) without running its fit.
func TestAsyncFitNotStartedWhenBudgetSpent(t *testing.T) {
	var builds int
	var mu sync.Mutex
	t.Cleanup(aggregators.SetBuildFault(func() error { mu.Lock(); builds++; mu.Unlock(); return nil }))
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	l, err := ledger.Open(ctx, &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 0.5}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock(at(0))
	e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{
		Aggregates: []aggregators.Config{wbConfig("weibull", 5*time.Second, 0.5)}, Topic: "in", Ledger: l, State: &ledger.MemoryState{},
		Fits: &captureSink{}, Clock: clock, Noise: dp.NewSeededSource(3), Metrics: aggregators.NewMetrics(reg), AsyncFits: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for w := range 2 {
		observeWindow(t, e, clock, w, 50)
		for range 3 {
			if _, err := e.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if err := e.WaitFits(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if builds != 1 {
		t.Errorf("%d fits run, want 1 (the second window's budget was spent)", builds)
	}
	if got := metric(t, reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "weibull", "reason": aggregators.ReasonBudgetExceeded}); got != 1 {
		t.Errorf("withheld{reason=budget_exceeded} = %v, want 1", got)
	}
}
