package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd/configtest"
)

// `dpsurv run --dry-run` accepts a config with a discrete aggregator and
// names the field of a bad discrete param.
func TestRunDryRunDiscreteAggregator(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	cfg := configtest.Config{
		Key:      key,
		Schema:   "{time_max: 3650, cohorts: [a, b], covariates: [age, bmi]}",
		FitTopic: true,
		More: `aggregators:
  - name: discrete-weekly
    kind: discrete
    epsilon: 1
    window: {size: 168h}
    params: {covariates: [age, bmi], centre: [60, 25], scale: [15, 5], method: output, intervals: 100}
ledger: {file: ` + filepath.Join(dir, "ledger.jsonl") + `, budget: {stream: 10}}
`,
	}.YAML()
	p := configtest.Write(t, filepath.Join(dir, "c.yaml"), cfg)
	o, e, code := run(t, "run", "--config", p, "--dry-run")
	if code != 0 || !strings.Contains(o, `"config":"ok"`) {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	configtest.Write(t, p, strings.Replace(cfg, "centre: [60, 25]", "centre: [60]", 1))
	_, e, code = run(t, "run", "--config", p, "--dry-run")
	if code == 0 || !strings.Contains(e, "aggregators[0].params.centre: 1 values for 2 covariates") {
		t.Fatalf("bad centre: exit %d, %s", code, e)
	}
}
