package app_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/internal/testtier"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// Two replicas with the same aggregators: one holds the lease and counts,
// the other sanitizes and stands by (its aggregators never touch the ledger).
// When the holder stops, the standby takes over from the holder's final
// checkpoint and releases the window with every record in it.
func TestAggregatorLeaseOneReplicaAggregates(t *testing.T) {
	t.Parallel()
	testtier.Full(t, "replica test")
	cohorts := []string{"A", "B"}
	cfg := e2eConfig(nil, "lease", cohorts, "out")
	cfg.Input.Partitions = 2
	cfg.Aggregators = []app.AggregatorConfig{{Name: "km", Kind: "km", Epsilon: 1,
		Window: app.WindowConfig{Size: time.Hour}, Params: aggregators.KMParams{BinWidth: 20, Method: "noisy-histogram"}}}
	cfg.Ledger = app.LedgerConfig{Topic: "dpsurv.ledger", Budget: map[string]float64{"stream": 10}, CheckpointInterval: time.Hour}
	w0 := time.Unix(1_700_002_800, 0).UTC()
	f := apptest.New(t, cfg, apptest.Partitions(2), apptest.Timeout(90*time.Second), apptest.Key(bytes.Repeat([]byte{3}, 32)),
		apptest.FakeClock(w0.Add(time.Minute)), apptest.NoValidate())
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		f.WaitFor(40*time.Second, what, cond)
	}

	svc1 := f.Run()
	waitFor("replica 1 to hold the lease", svc1.AggregatorLeader)
	svc2 := f.Run()
	waitFor("replica 2 to be ready", svc2.Ready)
	// Long enough for replica 2's join to have rebalanced the lease group
	// (heartbeats every second): the lease stays where it was.
	time.Sleep(3 * time.Second)
	waitFor("replica 1 to hold the lease after the rebalance", svc1.AggregatorLeader)
	if svc2.AggregatorLeader() {
		t.Fatal("both replicas hold the aggregator lease")
	}

	const n = 400
	produceCohort(f, synth.Options{N: n, Cohorts: cohorts, TimeMax: 400, Seed: 9, IDPrefix: "p-"}, 20)
	records := func(svc *apptest.Service) float64 {
		return svc.Metric("dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"})
	}
	waitFor("replica 1 to count the records", func() bool { return records(svc1) == n })
	if records(svc2) != 0 {
		t.Fatalf("the standby counted %v records", records(svc2))
	}

	if err := svc1.Stop(); err != nil {
		t.Fatalf("replica 1: %v", err)
	}
	waitFor("replica 2 to take over", func() bool { return svc2.AggregatorLeader() && svc2.Ready() })
	f.Clock.Set(w0.Add(61 * time.Minute))
	waitFor("the window to be released and published by replica 2", func() bool {
		return svc2.Metric("dpsurv_releases_total", map[string]string{"aggregate": "km"}) == 1 &&
			svc2.Metric("dpsurv_fit_messages_total", map[string]string{"aggregate": "km"}) == float64(len(cohorts))
	})
	if err := svc2.Stop(); err != nil {
		t.Fatalf("replica 2: %v", err)
	}
	col := f.Read("fits", "lease-reader")
	got := map[string]float64{}
	for len(got) < len(cohorts) {
		ms := col.Next()
		for _, m := range ms {
			if schemas.IsPatientStatementKey(m.Key) {
				continue // the privacy statement, once per holder
			}
			var fit struct{ N float64 }
			if err := jsonUnmarshal(m.Value, &fit); err != nil {
				t.Fatal(err)
			}
			got[string(m.Key)] = fit.N
		}
	}
	total := 0.0
	for _, v := range got {
		total += v
	}
	// 21 bins x 2 cells x 2 cohorts of noise with variance 7.83: SD 18;
	// 100 is 5.5 SD. Losing the holder's counts would give about 0.
	if math.Abs(total-n) > 100 {
		t.Fatalf("released n = %v after the handoff, want %d", total, n)
	}
	t.Logf("handoff: window released by the new holder with n = %.0f (true %d)", total, n)
	f.Mem.AssertSize(t, 0)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
