package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
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
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// Issue 22 finding 2: a service without output.sanitized_topic publishes
// central releases only, and its km releases then claim add/remove-one
// without the sanitized-topic amendment; with a sanitized topic the same
// release lists presence and n as public through it.
func TestCentralOnlyServiceEndToEnd(t *testing.T) {
	for _, sanitized := range []string{"", "out"} {
		t.Run("sanitized_topic="+sanitized, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			logs := &apptest.Logs{}
			log := logs.Logger()
			cl, _ := brokertest.Start(t, broker.Options{Partitions: 1})
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			cohorts := []string{"A", "B"}
			cfg := kmE2EConfig(cl.Addrs(), "central-e2e", cohorts, sanitized)
			cfg.Aggregators = []app.AggregatorConfig{{Name: "km", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour},
				Params: aggregators.Params{BinWidth: 20}}}
			cfg.Ledger = app.LedgerConfig{Topic: "dpsurv.ledger", Budget: map[string]float64{"stream": 10}, CheckpointInterval: time.Hour}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			w0 := time.Unix(1_700_002_800, 0).UTC()
			clock := apptest.NewClock(w0.Add(time.Minute))
			if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{"in": 1}, nil); err != nil {
				t.Fatal(err)
			}
			const n = 200
			d, err := synth.Generate(synth.Options{N: n, Cohorts: cohorts, TimeMax: 400, Seed: 3, IDPrefix: "secret-patient-"})
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
			reg := prometheus.NewRegistry()
			svc := &app.Service{Config: cfg, Key: bytes.Repeat([]byte{7}, 32), Log: log, Mem: mem, Registry: reg, Clock: clock,
				AggregatorTick: 20 * time.Millisecond}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- svc.Run(runCtx) }()
			if !harness.WaitFor(ctx, 30*time.Second, func() bool {
				return apptest.Metric(reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"}) == n
			}) {
				t.Fatalf("records not counted\n%s", logs.Tail())
			}
			clock.Set(w0.Add(61 * time.Minute))
			col, err := harness.NewCollector(cfg.Kafka, "fits", "fit-reader", log)
			if err != nil {
				t.Fatal(err)
			}
			defer col.Close()
			var fit aggregators.FitMessage
			for fit.Aggregate == "" {
				ms, err := col.Next(ctx)
				if err != nil {
					t.Fatalf("collect fits: %v\n%s", err, logs.Tail())
				}
				for _, m := range ms {
					if schemas.IsPatientStatementKey(m.Key) {
						continue // the privacy statement (statement_e2e_test.go)
					}
					if err := json.Unmarshal(m.Value, &fit); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			stop()
			if err := <-done; err != nil {
				t.Fatalf("run: %v", err)
			}
			listed := slices.Contains(fit.Public, aggregators.PublicViaSanitized)
			if listed != (sanitized != "") || strings.Contains(fit.Neighbouring, "sanitized topic") != (sanitized != "") {
				t.Fatalf("sanitized topic %q: release public %v, neighbouring %q", sanitized, fit.Public, fit.Neighbouring)
			}
			central := strings.Contains(logs.String(), "central releases only")
			if central != (sanitized == "") {
				t.Fatalf("sanitized topic %q: central-only logged %v", sanitized, central)
			}
			if strings.Contains(logs.String(), "secret-patient") {
				t.Fatal("logs contain raw record ids")
			}
			mem.AssertSize(t, 0)
		})
	}
}

// kmE2EConfig is a one-partition Arrow service config on the embedded
// broker with cohorts over [0, 400] days, the test TE settings and the
// given sanitized topic ("" for central releases only); the caller adds
// the aggregators and the ledger.
func kmE2EConfig(brokers []string, name string, cohorts []string, sanitized string) app.Config {
	cfg := app.DefaultConfig()
	cfg.Kafka = kafkaconn.Config{Brokers: brokers, ClientID: name}
	cfg.Input = app.InputConfig{Topic: "in", GroupID: name, Format: "arrow", MaxBatch: 8, Partitions: 1}
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 400, Cohorts: cohorts, Public: []string{"event"}}
	cfg.Sanitizers.KeyFile = "(test)"
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	cfg.Output = app.OutputConfig{SanitizedTopic: sanitized, DeadLetterTopic: "dlq", FitTopic: "fits"}
	cfg.HTTP.Listen = ""
	cfg.Log.Level = "debug"
	return cfg
}
