package app_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
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
	t.Parallel()
	cohorts := []string{"A", "B"}
	dir := t.TempDir()
	cfg := e2eConfig(nil, "horizon-e2e", cohorts, "out")
	cfg.Aggregators = []app.AggregatorConfig{{Name: "cum", Kind: "km", Epsilon: 1,
		Window: app.WindowConfig{Size: time.Hour, Cumulative: true, Horizon: 3}, Params: aggregators.KMParams{BinWidth: 20}}}
	// one horizon: epsilon 1, charged 2 beside the sanitized topic
	cfg.Ledger = app.LedgerConfig{File: dir + "/ledger.jsonl", Budget: map[string]float64{"stream": 2}, CheckpointInterval: time.Hour}
	w0 := time.Unix(1_700_002_800, 0).UTC()
	f := apptest.New(t, cfg, apptest.Timeout(60*time.Second), apptest.FakeClock(w0.Add(time.Minute)))
	produce := func(prefix string, seed uint64) int {
		return len(produceCohort(f, synth.Options{N: 100, Cohorts: cohorts, TimeMax: 400, Seed: seed, IDPrefix: prefix}, 50).Time)
	}
	run := func(clock *apptest.Clock, wait func(svc *apptest.Service) bool, what string) *apptest.Service {
		svc := f.Run(func(s *app.Service) { s.Clock = clock })
		f.WaitFor(40*time.Second, what, func() bool { return wait(svc) })
		svc.StopOK()
		return svc
	}

	// Run 1: window 0 released, the horizon charged.
	n := produce("secret-a-", 1)
	clock := f.Clock
	run(clock, func(svc *apptest.Service) bool {
		if svc.Metric("dpsurv_aggregator_records_total", map[string]string{"aggregate": "cum"}) == float64(n) {
			clock.Set(w0.Add(61 * time.Minute))
		}
		return svc.Metric("dpsurv_releases_total", map[string]string{"aggregate": "cum"}) == 1
	}, "window 0 released")

	// The checkpoint is lost; the ledger is kept.
	if err := os.Remove(f.Config.LedgerStateFile()); err != nil {
		t.Fatalf("remove the checkpoint: %v", err)
	}

	// Run 2: new patients, a new window.
	n2 := produce("secret-b-", 2)
	clock2 := apptest.NewClock(w0.Add(2*time.Hour + time.Minute))
	svc := run(clock2, func(svc *apptest.Service) bool {
		if svc.Metric("dpsurv_aggregator_records_total", map[string]string{"aggregate": "cum"}) >= float64(n2) {
			clock2.Set(w0.Add(3*time.Hour + time.Minute))
		}
		return svc.Metric("dpsurv_releases_withheld_total", map[string]string{"aggregate": "cum", "reason": aggregators.ReasonBudgetExceeded}) >= 1 ||
			svc.Metric("dpsurv_releases_total", map[string]string{"aggregate": "cum"}) >= 1
	}, "the new window released or withheld")
	if v := svc.Metric("dpsurv_releases_total", map[string]string{"aggregate": "cum"}); v != 0 {
		t.Fatalf("a second horizon was released under the first one's charge (%v releases after the checkpoint was lost)", v)
	}
	if v := svc.Metric("dpsurv_aggregator_horizons_restarted_total", map[string]string{"aggregate": "cum"}); v != 1 {
		t.Fatalf("horizons restarted %v, want 1", v)
	}
	led := f.OpenLedger()
	if s := led.Spent("stream"); s != 2 {
		t.Fatalf("spent %v, want 2 (one horizon)", s)
	}
	if !strings.Contains(f.Logs.String(), "starts a new horizon") {
		t.Fatal("the new horizon was not logged")
	}
	if strings.Contains(f.Logs.String(), "secret-") {
		t.Fatal("logs contain raw record ids")
	}
}
