package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
)

// docMetric matches a metric name in the documents.
var docMetric = regexp.MustCompile(`\bdpsurv_[a-z0-9_]*[a-z0-9]\b`)

// documentedMetrics returns the dpsurv_ names the documents mention, and
// those of the metrics reference table of docs/operations.md.
func documentedMetrics(t *testing.T) (anywhere, table map[string]bool) {
	t.Helper()
	root := filepath.Join("..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "deploy", "helm", "dpsurv", "README.md"))
	anywhere, table = map[string]bool{}, map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docMetric.FindAllString(string(b), -1) {
			anywhere[m] = true
		}
		if filepath.Base(f) == "operations.md" {
			_, ref, ok := strings.Cut(string(b), "\n## Metrics reference\n")
			if !ok {
				t.Fatal("docs/operations.md has no ## Metrics reference section")
			}
			if i := strings.Index(ref, "\n## "); i >= 0 {
				ref = ref[:i]
			}
			for _, l := range strings.Split(ref, "\n") {
				if strings.HasPrefix(l, "| `dpsurv_") {
					table[docMetric.FindString(l)] = true
				}
			}
		}
	}
	return anywhere, table
}

// Every metric the documents name is exported from the start of the
// process, before any Kafka connection (the broker here is unreachable),
// lease or event; every exported metric is in the reference table of
// docs/operations.md; and the series an alert counts exist at zero with
// their labels (on the old main the six below appeared only at their first
// increment, and five exported metrics were undocumented).
func TestEveryDocumentedMetricExportedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := apptest.KeyFile(t)
	cfg, err := app.ParseConfig([]byte(`
kafka: {brokers: ["127.0.0.1:1"]}
input: {topic: in}
schema: {time_max: 100, cohorts: [a, b]}
sanitizers:
  key_file: ` + keyFile + `
  time: {mechanism: te, epsilon: 0.1, window: 10}
  cohort: {mechanism: rrr, epsilon: 1}
output: {sanitized_topic: out, dead_letter_topic: dlq, fit_topic: fits}
aggregators:
  - {name: km-weekly, kind: km, epsilon: 0.5, window: {size: 168h}}
ledger: {file: ` + filepath.Join(dir, "ledger.jsonl") + `, budget: {stream: 5}}
http: {listen: "127.0.0.1:0"}
`))
	if err != nil {
		t.Fatal(err)
	}
	key, err := app.ReadKeyFile(keyFile, false)
	if err != nil {
		t.Fatal(err)
	}
	svc := &app.Service{Config: cfg, Key: key, Log: zap.NewNop()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(20 * time.Second)
	for svc.HealthAddr() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if svc.HealthAddr() == "" {
		t.Fatal("health server not up")
	}
	resp, err := http.Get("http://" + svc.HealthAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	exported := map[string]bool{}
	for _, l := range strings.Split(string(body), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" && strings.HasPrefix(f[2], "dpsurv_") {
			exported[f[2]] = true
		}
	}
	if os.Getenv("DPSURV_DUMP_METRICS") != "" {
		t.Log(string(body))
	}
	anywhere, table := documentedMetrics(t)
	var missing, undocumented []string
	// Read from the ledger, so exported once the lease holder has read it
	// (before, their value is not known); the table says so.
	fromLedger := map[string]bool{"dpsurv_privacy_budget_spent": true, "dpsurv_privacy_budget_remaining": true,
		// the Kafka source's read_committed counts: exported once the
		// source exists (the table says so)
		"dpsurv_input_transaction_messages_skipped_total": true, "dpsurv_input_unstable_messages": true}
	for m := range anywhere {
		if !exported[m] && !fromLedger[m] {
			missing = append(missing, m)
		}
	}
	for m := range exported {
		if !table[m] {
			undocumented = append(undocumented, m)
		}
	}
	sort.Strings(missing)
	sort.Strings(undocumented)
	if len(missing) > 0 {
		t.Errorf("documented but not exported at start: %v", missing)
	}
	if len(undocumented) > 0 {
		t.Errorf("exported but not in docs/operations.md's metrics reference: %v", undocumented)
	}
	for m := range table {
		if !exported[m] && !fromLedger[m] {
			t.Errorf("metrics reference lists %s, which is not exported", m)
		}
	}
	// The series of the issue, at zero, with their labels.
	for _, series := range []string{
		`dpsurv_values_clamped_total{field="time"} 0`,
		`dpsurv_sink_errors_total{sink="output"} 0`,
		`dpsurv_sink_errors_total{sink="dead_letter"} 0`,
		`dpsurv_aggregator_late_records_total{aggregate="km-weekly"} 0`,
		`dpsurv_aggregator_records_skipped_total{aggregate="km-weekly",reason="max_patients"} 0`,
		`dpsurv_aggregator_values_clamped_total{aggregate="km-weekly"} 0`,
		`dpsurv_ledger_refusals_total{scope="stream"} 0`,
		`dpsurv_consumer_lag_messages 0`,
		`dpsurv_privacy_budget_limit{scope="stream"} 5`,
	} {
		if !bytes.Contains(body, []byte("\n"+series+"\n")) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	if !regexp.MustCompile(`\ndpsurv_build_info\{goversion="go[^"]+",revision="[^"]+",version="[0-9]+\.[0-9]+\.[0-9]+[^"]*"\} 1\n`).Match(body) {
		t.Errorf("/metrics lacks dpsurv_build_info{goversion,revision,version} 1")
	}
}
