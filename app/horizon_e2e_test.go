package app_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/internal/harness"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/synth"
)

// Issue 22 finding 1, through the real service: a cumulative aggregate
// (file ledger, stream budget for one horizon) releases a window, the
// service stops, its checkpoint file is deleted with the ledger kept, and
// it starts again. The new tree must be a new horizon charged anew — here
// refused by the budget, so its windows are withheld — never a second
// horizon published under the first horizon's one charge (on the old code:
// release_index 1 again, spent unchanged).
func TestCumulativeLostCheckpointEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := &apptest.Logs{}
	log := logs.Logger()
	cl, _ := brokertest.Start(t, broker.Options{Partitions: 1})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cohorts := []string{"A", "B"}
	dir := t.TempDir()
	cfg := kmE2EConfig(cl.Addrs(), "horizon-e2e", cohorts, "out")
	cfg.Aggregators = []app.AggregatorConfig{{Name: "cum", Kind: "km", Epsilon: 1,
		Window: app.WindowConfig{Size: time.Hour, Cumulative: true, Horizon: 3}, Params: aggregators.Params{BinWidth: 20}}}
	// one horizon: epsilon 1, charged 2 beside the sanitized topic
	cfg.Ledger = app.LedgerConfig{File: dir + "/ledger.jsonl", Budget: map[string]float64{"stream": 2}, CheckpointInterval: time.Hour}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{"in": 1}, nil); err != nil {
		t.Fatal(err)
	}
	w0 := time.Unix(1_700_002_800, 0).UTC()
	produce := func(prefix string, seed uint64) int {
		d, err := synth.Generate(synth.Options{N: 100, Cohorts: cohorts, TimeMax: 400, Seed: seed, IDPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := harness.Messages(cfg.Spec(), d, 50, mem)
		if err != nil {
			t.Fatal(err)
		}
		if err := harness.Produce(ctx, cfg.Kafka, "in", msgs, log); err != nil {
			t.Fatal(err)
		}
		return len(d.Time)
	}
	run := func(clock *apptest.Clock, wait func(reg *prometheus.Registry) bool, what string) *prometheus.Registry {
		reg := prometheus.NewRegistry()
		svc := &app.Service{Config: cfg, Key: bytes.Repeat([]byte{7}, 32), Log: log, Mem: mem, Registry: reg, Clock: clock,
			AggregatorTick: 20 * time.Millisecond}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- svc.Run(runCtx) }()
		if !harness.WaitFor(ctx, 40*time.Second, func() bool { return wait(reg) }) {
			stop()
			<-done
			t.Fatalf("timed out waiting for %s\n%s", what, logs.Tail())
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
		return reg
	}

	// Run 1: window 0 released, the horizon charged.
	n := produce("secret-a-", 1)
	clock := apptest.NewClock(w0.Add(time.Minute))
	run(clock, func(reg *prometheus.Registry) bool {
		if apptest.Metric(reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "cum"}) == float64(n) {
			clock.Set(w0.Add(61 * time.Minute))
		}
		return apptest.Metric(reg, "dpsurv_releases_total", map[string]string{"aggregate": "cum"}) == 1
	}, "window 0 released")

	// The checkpoint is lost; the ledger is kept.
	if err := os.Remove(cfg.LedgerStateFile()); err != nil {
		t.Fatalf("remove the checkpoint: %v", err)
	}

	// Run 2: new patients, a new window.
	n2 := produce("secret-b-", 2)
	clock2 := apptest.NewClock(w0.Add(2*time.Hour + time.Minute))
	reg := run(clock2, func(reg *prometheus.Registry) bool {
		if apptest.Metric(reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "cum"}) >= float64(n2) {
			clock2.Set(w0.Add(3*time.Hour + time.Minute))
		}
		return apptest.Metric(reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "cum", "reason": aggregators.ReasonBudgetExceeded}) >= 1 ||
			apptest.Metric(reg, "dpsurv_releases_total", map[string]string{"aggregate": "cum"}) >= 1
	}, "the new window released or withheld")
	if v := apptest.Metric(reg, "dpsurv_releases_total", map[string]string{"aggregate": "cum"}); v != 0 {
		t.Fatalf("a second horizon was released under the first one's charge (%v releases after the checkpoint was lost)", v)
	}
	if v := apptest.Metric(reg, "dpsurv_aggregator_horizons_restarted_total", map[string]string{"aggregate": "cum"}); v != 1 {
		t.Fatalf("horizons restarted %v, want 1", v)
	}
	lb, err := ledger.OpenFile(cfg.Ledger.File, nil)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(ctx, lb, ledger.Options{Budget: cfg.Ledger.Budget})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if s := led.Spent("stream"); s != 2 {
		t.Fatalf("spent %v, want 2 (one horizon)", s)
	}
	if !strings.Contains(logs.String(), "starts a new horizon") {
		t.Fatal("the new horizon was not logged")
	}
	if strings.Contains(logs.String(), "secret-") {
		t.Fatal("logs contain raw record ids")
	}
}
