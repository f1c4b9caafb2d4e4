package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
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
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// Issue 22: the running service publishes the per-patient privacy statement
// on the fit topic, as the first message of the aggregators' start (before
// any release), equal to what `dpsurv statement` computes for the same
// configuration (app.Statement: its JSON and its Markdown), with a sanitized
// topic and in central-only mode; a reload that raises a budget publishes
// the new statement (its central cap follows the budget). On the old main
// the fit topic carried releases only.
func TestStatementPublishedOnFitTopic(t *testing.T) {
	for _, sanitized := range []string{"out", ""} {
		t.Run("sanitized_topic="+sanitized, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			logs := &apptest.Logs{}
			log := logs.Logger()
			cl, _ := brokertest.Start(t, broker.Options{Partitions: 1})
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			cohorts := []string{"A", "B"}
			cfg := e2eConfig(cl.Addrs(), "statement-e2e", cohorts, sanitized)
			cfg.Aggregators = []app.AggregatorConfig{
				{Name: "km", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour}, Params: aggregators.KMParams{BinWidth: 20}},
				{Name: "cum", Kind: "km", Epsilon: 0.5, Window: app.WindowConfig{Size: time.Hour, Cumulative: true, Horizon: 4},
					Params: aggregators.KMParams{BinWidth: 20}},
			}
			cfg.Ledger = app.LedgerConfig{File: filepath.Join(t.TempDir(), "ledger.jsonl"), Budget: map[string]float64{"stream": 10},
				CheckpointInterval: time.Hour}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{"in": 1}, nil); err != nil {
				t.Fatal(err)
			}
			const n = 100
			d, err := synth.Generate(synth.Options{N: n, Cohorts: cohorts, TimeMax: 400, Seed: 5, IDPrefix: "secret-patient-"})
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
			w0 := time.Unix(1_700_002_800, 0).UTC()
			clock := apptest.NewClock(w0.Add(time.Minute))
			reg := prometheus.NewRegistry()
			svc := apptest.RunService(t, ctx, &app.Service{Config: cfg, Key: bytes.Repeat([]byte{7}, 32), Log: log, Mem: mem, Registry: reg, Clock: clock,
				AggregatorTick: 20 * time.Millisecond})
			defer func() {
				if err := svc.Stop(); err != nil {
					t.Errorf("run: %v", err)
				}
				mem.AssertSize(t, 0)
			}()
			if !harness.WaitFor(ctx, 40*time.Second, func() bool {
				return apptest.Metric(reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"}) == n
			}) {
				t.Fatalf("records not counted\n%s", logs.Tail())
			}
			clock.Set(w0.Add(61 * time.Minute))

			col, err := harness.NewCollector(cfg.Kafka, "fits", "statement-reader", log)
			if err != nil {
				t.Fatal(err)
			}
			defer col.Close()
			// read until a statement and a release of each aggregate; keep
			// the order
			var order []string
			var statements [][]byte
			releases := map[string]bool{}
			next := func(until func() bool) {
				t.Helper()
				for !until() {
					ms, err := col.Next(ctx)
					if err != nil {
						t.Fatalf("read the fit topic: %v (order %v)\n%s", err, order, logs.Tail())
					}
					for _, m := range ms {
						order = append(order, string(m.Key))
						if schemas.IsPatientStatementKey(m.Key) {
							statements = append(statements, m.Value)
							continue
						}
						var f aggregators.FitMessage
						if err := json.Unmarshal(m.Value, &f); err != nil {
							t.Fatal(err)
						}
						if f.Schema != schemas.FitSchemaName {
							t.Fatalf("release %s has schema %q", m.Key, f.Schema)
						}
						releases[f.Aggregate] = true
					}
				}
			}
			next(func() bool { return len(statements) > 0 && releases["km"] && releases["cum"] })
			if order[0] != schemas.PatientStatementKey {
				t.Errorf("the fit topic starts with %q, want the statement before any release (order %v)", order[0], order)
			}
			checkStatement(t, cfg, statements[0], sanitized == "")

			// A reload raising the stream budget republishes the statement
			// with the new cap.
			raised := cfg
			raised.Ledger.Budget = map[string]float64{"stream": 20}
			rep := svc.Reload(raised, svc.Key)
			if len(rep.Applied) != 1 || len(rep.NeedRestart)+len(rep.Refused) != 0 {
				t.Fatalf("reload: %+v", rep)
			}
			had := len(statements)
			next(func() bool { return len(statements) > had })
			doc := checkStatement(t, raised, statements[had], sanitized == "")
			if doc.Statement.CentralCap == nil || *doc.Statement.CentralCap != 20 {
				t.Errorf("after the reload the central cap is %v, want 20", doc.Statement.CentralCap)
			}
			if strings.Contains(logs.String(), "secret-patient") {
				t.Fatal("logs contain raw record ids")
			}
		})
	}
}

// checkStatement checks a fit-topic statement against the configuration's:
// the bytes of app.StatementMessage, the statement `dpsurv statement
// --json` prints (app.Statement) and its Markdown.
func checkStatement(t *testing.T, cfg app.Config, value []byte, centralOnly bool) app.StatementDocument {
	t.Helper()
	want, err := app.StatementMessage(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if string(want.Key) != schemas.PatientStatementKey || !bytes.Equal(value, want.Value) {
		t.Errorf("published statement\n%s\nwant\n%s", value, want.Value)
	}
	var doc app.StatementDocument
	if err := json.Unmarshal(value, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != schemas.PatientStatementSchemaName || doc.Kind != schemas.PatientStatementKind || doc.Key != schemas.PatientStatementKey {
		t.Errorf("schema %q, kind %q, key %q", doc.Schema, doc.Kind, doc.Key)
	}
	st, err := app.Statement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct{ Statement json.RawMessage }
	if err := json.Unmarshal(value, &raw); err != nil {
		t.Fatal(err)
	}
	if wantJSON, _ := json.Marshal(st); !bytes.Equal(raw.Statement, wantJSON) {
		t.Errorf("statement\n%s\nwant (dpsurv statement --json)\n%s", raw.Statement, wantJSON)
	}
	if doc.Markdown != st.Markdown() {
		t.Errorf("markdown\n%s\nwant (dpsurv statement)\n%s", doc.Markdown, st.Markdown())
	}
	if len(doc.Statement.Central) != len(cfg.Aggregators) || (len(doc.Statement.Sanitized) == 0) != centralOnly {
		t.Errorf("central-only %v: statement lists %d aggregates, %d sanitized fields", centralOnly, len(doc.Statement.Central), len(doc.Statement.Sanitized))
	}
	if centralOnly && (doc.Statement.SanitizedPerVersion != 0 || !strings.HasPrefix(doc.Statement.Relation, "add/remove-one")) {
		t.Errorf("central-only statement: sanitized loss %v, relation %q", doc.Statement.SanitizedPerVersion, doc.Statement.Relation)
	}
	return doc
}
