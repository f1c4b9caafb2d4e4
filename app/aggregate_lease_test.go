package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/internal/testtier"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/internal/harness"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// Two replicas with the same aggregators: one holds the lease and counts,
// the other sanitizes and stands by (its aggregators never touch the ledger).
// When the holder stops, the standby takes over from the holder's final
// checkpoint and releases the window with every record in it.
func TestAggregatorLeaseOneReplicaAggregates(t *testing.T) {
	testtier.Full(t, "replica test")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logs := &apptest.Logs{}
	log := logs.Logger()
	cl, _ := brokertest.Start(t, broker.Options{Partitions: 2})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cohorts := []string{"A", "B"}
	cfg := app.DefaultConfig()
	cfg.Kafka = kafkaconn.Config{Brokers: cl.Addrs(), ClientID: "lease"}
	cfg.Input = app.InputConfig{Topic: "in", GroupID: "lease", Format: "arrow", MaxBatch: 8, Partitions: 2}
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 400, Cohorts: cohorts, Public: []string{"event"}}
	cfg.Sanitizers.KeyFile = "(test)"
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	cfg.Output = app.OutputConfig{SanitizedTopic: "out", DeadLetterTopic: "dlq", FitTopic: "fits"}
	cfg.HTTP.Listen = ""
	cfg.Aggregators = []app.AggregatorConfig{{Name: "km", Kind: "km", Epsilon: 1,
		Window: app.WindowConfig{Size: time.Hour}, Params: aggregators.Params{BinWidth: 20, Method: "noisy-histogram"}}}
	cfg.Ledger = app.LedgerConfig{Topic: "dpsurv.ledger", Budget: map[string]float64{"stream": 10}, CheckpointInterval: time.Hour}
	key := bytes.Repeat([]byte{3}, 32)
	w0 := time.Unix(1_700_002_800, 0).UTC()
	clock := apptest.NewClock(w0.Add(time.Minute))
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if !harness.WaitFor(ctx, 40*time.Second, cond) {
			t.Fatalf("timed out waiting for %s\n%s", what, logs.Tail())
		}
	}

	start := func() (*app.Service, *prometheus.Registry, context.CancelFunc, chan error) {
		reg := prometheus.NewRegistry()
		svc := &app.Service{Config: cfg, Key: key, Log: log, Mem: mem, Registry: reg, Clock: clock, AggregatorTick: 20 * time.Millisecond}
		c, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- svc.Run(c) }()
		return svc, reg, stop, done
	}
	svc1, reg1, stop1, done1 := start()
	waitFor("replica 1 to hold the lease", svc1.AggregatorLeader)
	svc2, reg2, stop2, done2 := start()
	waitFor("replica 2 to be ready", svc2.Ready)
	// Long enough for replica 2's join to have rebalanced the lease group
	// (heartbeats every second): the lease stays where it was.
	time.Sleep(3 * time.Second)
	waitFor("replica 1 to hold the lease after the rebalance", svc1.AggregatorLeader)
	if svc2.AggregatorLeader() {
		t.Fatal("both replicas hold the aggregator lease")
	}

	const n = 400
	d, err := synth.Generate(synth.Options{N: n, Cohorts: cohorts, TimeMax: 400, Seed: 9, IDPrefix: "p-"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := harness.Messages(cfg.Spec(), d, 20, mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.Produce(ctx, cfg.Kafka, "in", msgs, log); err != nil {
		t.Fatal(err)
	}
	records := func(reg *prometheus.Registry) float64 {
		return apptest.Metric(reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"})
	}
	waitFor("replica 1 to count the records", func() bool { return records(reg1) == n })
	if records(reg2) != 0 {
		t.Fatalf("the standby counted %v records", records(reg2))
	}

	stop1()
	if err := <-done1; err != nil {
		t.Fatalf("replica 1: %v", err)
	}
	waitFor("replica 2 to take over", func() bool { return svc2.AggregatorLeader() && svc2.Ready() })
	clock.Set(w0.Add(61 * time.Minute))
	waitFor("the window to be released and published by replica 2", func() bool {
		return apptest.Metric(reg2, "dpsurv_releases_total", map[string]string{"aggregate": "km"}) == 1 &&
			apptest.Metric(reg2, "dpsurv_fit_messages_total", map[string]string{"aggregate": "km"}) == float64(len(cohorts))
	})
	stop2()
	if err := <-done2; err != nil {
		t.Fatalf("replica 2: %v", err)
	}
	col, err := harness.NewCollector(cfg.Kafka, "fits", "lease-reader", log)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	got := map[string]float64{}
	for len(got) < len(cohorts) {
		ms, err := col.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if schemas.IsPatientStatementKey(m.Key) {
				continue // the privacy statement, once per holder
			}
			var f struct{ N float64 }
			if err := jsonUnmarshal(m.Value, &f); err != nil {
				t.Fatal(err)
			}
			got[string(m.Key)] = f.N
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
	mem.AssertSize(t, 0)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
