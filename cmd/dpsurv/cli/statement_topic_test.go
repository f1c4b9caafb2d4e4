package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/schemas"
)

// The statement the service publishes on the fit topic
// (app.StatementMessage; app's TestStatementPublishedOnFitTopic reads it off
// the topic of the running service) is what `dpsurv statement` prints for
// the same config file: its "statement" is `dpsurv statement --json`, byte
// for byte, its "markdown" the command's Markdown, and `dpsurv run
// --dry-run` shows the same patient_statement. With and without a
// sanitized topic (central-only).
func TestFitTopicStatementIsTheCommandsStatement(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "prf.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, output := range []string{"{sanitized_topic: s, dead_letter_topic: d, fit_topic: f}", "{dead_letter_topic: d, fit_topic: f}"} {
		t.Run(output, func(t *testing.T) {
			path := filepath.Join(dir, "c.yaml")
			y := "kafka: {brokers: [\"127.0.0.1:1\"]}\ninput: {topic: in}\nschema: {time_unit: days, time_max: 1000, cohorts: [a, b, c]}\n" +
				"sanitizers: {key_file: " + key + ", time: {mechanism: te, epsilon: 0.5, window: 10}, cohort: {mechanism: rrr, epsilon: 1}}\n" +
				"output: " + output + "\n" +
				"aggregators: [{name: km, kind: km, epsilon: 1, window: {size: 1h}}, " +
				"{name: cum, kind: km, epsilon: 0.5, window: {size: 1h, cumulative: true, horizon: 6}}]\n" +
				"ledger: {topic: l, budget: {stream: 4, \"cohort:a\": 3}}\n"
			if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := app.LoadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := app.StatementMessage(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if string(msg.Key) != schemas.PatientStatementKey {
				t.Fatalf("key %q", msg.Key)
			}
			var doc struct {
				Schema, Kind, Markdown string
				Statement              json.RawMessage
			}
			if err := json.Unmarshal(msg.Value, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Schema != schemas.PatientStatementSchemaName || doc.Kind != schemas.PatientStatementKind {
				t.Errorf("schema %q kind %q", doc.Schema, doc.Kind)
			}
			js := runOK(t, "statement", "--config", path, "--json")
			if !bytes.Equal(bytes.TrimSpace([]byte(js)), doc.Statement) {
				t.Errorf("fit topic statement\n%s\n`dpsurv statement --json`\n%s", doc.Statement, js)
			}
			md := runOK(t, "statement", "--config", path)
			if md != doc.Markdown {
				t.Errorf("fit topic markdown\n%s\n`dpsurv statement`\n%s", doc.Markdown, md)
			}
			dry := runOK(t, "run", "--config", path, "--dry-run")
			var d struct {
				Statement json.RawMessage `json:"patient_statement"`
			}
			if err := json.Unmarshal([]byte(dry), &d); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(d.Statement, doc.Statement) {
				t.Errorf("dry run's patient_statement\n%s\nfit topic statement\n%s", d.Statement, doc.Statement)
			}
			// the cohort budget binds: cap 3 either way
			if !strings.Contains(md, "at most **3.00** in all (budget `cohort:a`)") {
				t.Errorf("markdown:\n%s", md)
			}
		})
	}
}
