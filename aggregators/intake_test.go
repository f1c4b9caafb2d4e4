package aggregators_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
)

// No window fit holds up the intake or another window's release (issue 24:
// a km + weibull + discrete stream whose fits never block intake). km,
// weibull and discrete aggregates on 5 s windows; km's fit of window 0 is
// held at a gate. While it is held every Tick returns, the next window's
// records are counted, and every other window — km's window 1 included —
// is released and published on the Tick after its fit ends. Once the gate
// opens km's window 0 is released too. With an inline km fit the first
// Tick would wait at the gate: the test reports it and fails. km windows
// are not bounded by max_pending_windows (1 here).
func TestFitNeverBlocksIntake(t *testing.T) {
	synctest.Test(t, testFitNeverBlocksIntake)
}

func testFitNeverBlocksIntake(t *testing.T) {
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open)
	t.Cleanup(aggregators.SetFitGate(func(agg string, start time.Time) {
		if agg == "km" && start.Equal(at(0)) {
			<-gate
		}
	}))
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	l, err := ledger.Open(ctx, &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 1e6}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	dt := discCfg("dt", 1)
	dt.Window.Size = 5 * time.Second
	clock := newClock(at(0))
	fits := &captureSink{}
	e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{
		Aggregates: []aggregators.Config{kmConfig("km", 5*time.Second, 1), wbConfig("weibull", 5*time.Second, 0.5), dt},
		Topic:      "in", Ledger: l, State: &ledger.MemoryState{}, Fits: fits, Clock: clock,
		Noise: dp.NewSeededSource(24), Metrics: aggregators.NewMetrics(reg), AsyncFits: true,
		MaxConcurrentFits: 4, // the held fit keeps its slot
		// km's window 1 closes while window 0 is pending: km windows are
		// not bounded by it (they hold only counts), so it is released.
		MaxPendingWindows: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	observe := func(w int) {
		t.Helper()
		clock.Set(at(5*w + 1))
		rec := discRecord(t, n)
		defer rec.Release()
		if err := e.Observe(0, int64(w), rec); err != nil {
			t.Fatal(err)
		}
		clock.Set(at(5*w + 5)) // window w closes (lateness 0)
	}
	// tick runs one Tick and waits until every goroutine of the bubble is
	// blocked: the fits not held have ended. A Tick still running then is
	// waiting for the held fit.
	tick := func() {
		t.Helper()
		done := make(chan error, 1)
		go func() { _, err := e.Tick(ctx); done <- err }()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			open()
			<-done
			t.Fatal("Tick waited for km's window fit: the intake stalls while a fit runs")
		}
	}
	released := func() map[string]bool {
		out := map[string]bool{}
		for _, f := range fits.fits(t) {
			out[aggregators.WindowKey(f.Aggregate, f.WindowStartUnix)] = true
		}
		return out
	}
	key := func(agg string, w int) string { return aggregators.WindowKey(agg, at(5*w).Unix()) }
	records := func(agg string) float64 {
		return metric(t, reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": agg})
	}

	observe(0)
	tick() // window 0 closes: three fits start, km's is held
	tick() // weibull's and dt's recorded and published
	observe(1)
	for _, agg := range []string{"km", "weibull", "dt"} {
		if got := records(agg); got != 2*n {
			t.Errorf("%s counted %v records while km's window 0 fit was held, want %d", agg, got, 2*n)
		}
	}
	tick() // window 1 closes
	tick()
	got := released()
	for _, k := range []string{key("weibull", 0), key("dt", 0), key("weibull", 1), key("dt", 1), key("km", 1)} {
		if !got[k] {
			t.Errorf("window %s not published while km's window 0 fit was held", k)
		}
	}
	for _, agg := range []string{"km", "weibull", "dt"} {
		if w := metric(t, reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": agg, "reason": aggregators.ReasonPendingLimit}); w != 0 {
			t.Errorf("%s: %v windows withheld at the pending limit", agg, w)
		}
	}
	if got[key("km", 0)] {
		t.Fatalf("km window 0 published while its fit was held")
	}
	if p := metric(t, reg, "dpsurv_aggregator_pending_windows", map[string]string{"aggregate": "km"}); p != 1 {
		t.Errorf("km pending windows %v while its fit is held, want 1", p)
	}
	if r := metric(t, reg, "dpsurv_aggregator_fits_running", nil); r != 1 {
		t.Errorf("fits running %v, want 1 (the held one)", r)
	}

	open()
	synctest.Wait()
	tick()
	if !released()[key("km", 0)] {
		t.Errorf("km window 0 not published on the Tick after its fit ended")
	}
	if p := metric(t, reg, "dpsurv_aggregator_pending_windows", map[string]string{"aggregate": "km"}); p != 0 {
		t.Errorf("km pending windows %v after every release, want 0", p)
	}
	// Release delays (publication - window close, engine clock): km's
	// window 1 on the Tick of its close (0 s), window 0 five seconds
	// late (the clock moved on while its fit was held).
	if n, sum := histogram(t, reg, "dpsurv_aggregator_release_delay_seconds", "km"); n != 2 || sum != 5 {
		t.Errorf("km release delays: %d observations summing to %v s, want 2 summing to 5 s", n, sum)
	}
	if n, sum := histogram(t, reg, "dpsurv_aggregator_release_delay_seconds", "weibull"); n != 2 || sum != 0 {
		t.Errorf("weibull release delays: %d observations summing to %v s, want 2 summing to 0 s", n, sum)
	}
}

// histogram returns the count and sum of an aggregate's histogram.
func histogram(t *testing.T, reg *prometheus.Registry, name, aggregate string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "aggregate" && lp.GetValue() == aggregate {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}
