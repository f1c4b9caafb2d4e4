package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
)

// `dpsurv run --dry-run` accepts a config with a discrete aggregator and
// names the field of a bad discrete param.
func TestRunDryRunDiscreteAggregator(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	cfg := `
kafka: {brokers: ["127.0.0.1:1"]}
input: {topic: in}
schema: {time_max: 3650, cohorts: [a, b], covariates: [age, bmi]}
sanitizers:
  key_file: ` + key + `
  time: {mechanism: te, epsilon: 0.1, window: 10}
  cohort: {mechanism: rrr, epsilon: 1}
output: {sanitized_topic: out, dead_letter_topic: dlq, fit_topic: fits}
aggregators:
  - name: discrete-weekly
    kind: discrete
    epsilon: 1
    window: {size: 168h}
    params: {covariates: [age, bmi], centre: [60, 25], scale: [15, 5], method: output, intervals: 100}
ledger: {file: ` + filepath.Join(dir, "ledger.jsonl") + `, budget: {stream: 10}}
`
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	o, e, code := run(t, "run", "--config", p, "--dry-run")
	if code != 0 || !strings.Contains(o, `"config":"ok"`) {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(cfg, "centre: [60, 25]", "centre: [60]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, e, code = run(t, "run", "--config", p, "--dry-run")
	if code == 0 || !strings.Contains(e, "aggregators[0].params.centre: 1 values for 2 covariates") {
		t.Fatalf("bad centre: exit %d, %s", code, e)
	}
}
