package app_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/schemas"
)

// Issue 22: the running service publishes the per-patient privacy statement
// on the fit topic, as the first message of the aggregators' start (before
// any release), equal to what `dpsurv statement` computes for the same
// configuration (app.Statement: its JSON and its Markdown), with a sanitized
// topic and in central-only mode; a reload that raises a budget publishes
// the new statement (its central cap follows the budget). On the old main
// the fit topic carried releases only.
func TestStatementPublishedOnFitTopic(t *testing.T) {
	t.Parallel()
	for _, sanitized := range []string{"out", ""} {
		t.Run("sanitized_topic="+sanitized, func(t *testing.T) {
			t.Parallel()
			cohorts := []string{"A", "B"}
			cfg := e2eConfig(nil, "statement-e2e", cohorts, sanitized)
			cfg.Aggregators = []app.AggregatorConfig{
				{Name: "km", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour}, Params: aggregators.KMParams{BinWidth: 20}},
				{Name: "cum", Kind: "km", Epsilon: 0.5, Window: app.WindowConfig{Size: time.Hour, Cumulative: true, Horizon: 4},
					Params: aggregators.KMParams{BinWidth: 20}},
			}
			cfg.Ledger = app.LedgerConfig{File: filepath.Join(t.TempDir(), "ledger.jsonl"), Budget: map[string]float64{"stream": 10},
				CheckpointInterval: time.Hour}
			f, svc := runFirstWindow(t, cfg, 100, 5)
			defer func() {
				svc.StopOK()
				f.Mem.AssertSize(t, 0)
			}()
			cfg = f.Config
			fits := f.Read("fits", "statement-reader")
			// read until a statement and a release of each aggregate; keep
			// the order
			var order []string
			var statements [][]byte
			releases := map[string]bool{}
			next := func(until func() bool) {
				t.Helper()
				for !until() {
					for _, m := range fits.Next() {
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
			if strings.Contains(f.Logs.String(), "secret-patient") {
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
