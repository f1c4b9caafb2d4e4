package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return out.String(), errb.String(), code
}

func writeKey(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prf.key")
	if err := os.WriteFile(p, []byte(strings.Repeat("5a", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSanitizeJSONAndReplayStability(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t)
	args := func(out string) []string {
		return []string{"sanitize", "--input", datasets.Path(t, "kidney_tte.csv"), "--output", out,
			"--cohorts", "1,2,3", "--time-max", "600", "--te-epsilon", "0.1", "--te-window", "10",
			"--rrr-epsilon", "1", "--key-file", key}
	}
	o1, e1, code := run(t, args(filepath.Join(dir, "a.csv"))...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e1)
	}
	var sum struct {
		RecordsIn         int            `json:"records_in"`
		RecordsOut        int            `json:"records_out"`
		DeadLettered      int            `json:"dead_lettered"`
		DeadLetterReasons map[string]int `json:"dead_letter_reasons"`
		Guarantees        []struct {
			Field         string   `json:"field"`
			Mechanism     string   `json:"mechanism"`
			Epsilon       *float64 `json:"epsilon"`
			Window        *int     `json:"window"`
			WorstCaseLoss *float64 `json:"worst_case_loss"`
			Kind          string   `json:"kind"`
		} `json:"guarantees"`
	}
	if err := json.Unmarshal([]byte(o1), &sum); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, o1)
	}
	// kidney has 76 rows, 4 diseases; cohort 4 is not in the list.
	if sum.RecordsIn != 76 || sum.RecordsOut+sum.DeadLettered != 76 || sum.DeadLetterReasons["unknown_cohort"] != sum.DeadLettered || sum.DeadLettered == 0 {
		t.Fatalf("summary %+v", sum)
	}
	var te bool
	for _, g := range sum.Guarantees {
		if g.Field == "time" {
			te = true
			if *g.Epsilon != 0.1 || *g.Window != 10 || *g.WorstCaseLoss < 2.25 || *g.WorstCaseLoss > 2.26 || g.Kind != "time-indistinguishability" {
				t.Fatalf("te guarantee %+v", g)
			}
		}
	}
	if !te {
		t.Fatal("no time guarantee")
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.csv"))
	if !strings.HasPrefix(string(a), "id,time,cohort,event\n") {
		t.Fatalf("header: %q", strings.SplitN(string(a), "\n", 2)[0])
	}
	if _, _, code := run(t, args(filepath.Join(dir, "b.csv"))...); code != 0 {
		t.Fatal("second run failed")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "b.csv"))
	if !bytes.Equal(a, b) {
		t.Fatal("same input and key gave different outputs")
	}
	dl, err := os.ReadFile(filepath.Join(dir, "a.csv.deadletter.jsonl"))
	if err != nil || bytes.Count(dl, []byte("\n")) != sum.DeadLettered {
		t.Fatalf("dead-letter file: %v, %d lines", err, bytes.Count(dl, []byte("\n")))
	}
}

func TestSanitizeRefusesWithoutKey(t *testing.T) {
	_, e, code := run(t, "sanitize", "--input", "x.csv", "--output", "y.csv", "--cohorts", "1")
	if code == 0 || !strings.Contains(e, "--key-file is required") {
		t.Fatalf("exit %d, %s", code, e)
	}
	missing := filepath.Join(t.TempDir(), "nokey")
	_, e, code = run(t, "sanitize", "--input", "x.csv", "--output", "y.csv", "--cohorts", "1", "--time-max", "10", "--key-file", missing)
	if code == 0 || !strings.Contains(e, "sanitizers.key_file") {
		t.Fatalf("exit %d, %s", code, e)
	}
}

func TestRunDryRun(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t)
	cfg := `
kafka: {brokers: ["127.0.0.1:1"]}
input: {topic: in}
schema: {time_max: 100, cohorts: [a, b]}
sanitizers:
  key_file: ` + key + `
  time: {mechanism: te, epsilon: 0.1, window: 10}
  cohort: {mechanism: rrr, epsilon: 1}
output: {sanitized_topic: out, dead_letter_topic: dlq}
`
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte(cfg), 0o600)
	o, e, code := run(t, "run", "--config", p, "--dry-run")
	if code != 0 || !strings.Contains(o, `"config":"ok"`) || !strings.Contains(o, "worst_case_loss") {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	// Missing key: refuses to start.
	os.WriteFile(p, []byte(strings.Replace(cfg, "key_file: "+key, "key_file: "+filepath.Join(dir, "absent"), 1)), 0o600)
	_, e, code = run(t, "run", "--config", p, "--dry-run")
	if code == 0 || !strings.Contains(e, "sanitizers.key_file") {
		t.Fatalf("missing key: exit %d, %s", code, e)
	}
	// A config error names its field.
	os.WriteFile(p, []byte(strings.Replace(cfg, "input: {topic: in}", "input: {topik: in}", 1)), 0o600)
	_, e, code = run(t, "run", "--config", p, "--dry-run")
	if code == 0 || !strings.Contains(e, "input.topik: unknown field") {
		t.Fatalf("unknown field: exit %d, %s", code, e)
	}
}

func TestDemoRunsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	o, e, code := run(t, "demo", "--n", "3000", "--out-dir", dir, "--duration", "60s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	for _, want := range []string{"EPHEMERAL", "sanitized: 3001 records", "dead letters: 4", "duplicate_id:1", "undecodable:1", "median survival",
		"central releases on the fit topic", "km-demo", "weibull-demo", "pure-dp", "stream budget left"} {
		if !strings.Contains(o, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, o)
		}
	}
	for _, p := range []string{"km_sanitized.png", "km_release.png"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() < 1000 {
			t.Fatalf("plot %s: %v", p, err)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	if _, _, code := run(t, "frobnicate"); code != 2 {
		t.Fatalf("exit %d", code)
	}
}

func TestSanitizeBaselines(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mech  string
		extra []string
		guar  string
	}{
		{"binsup", []string{"--size-bin", "2", "--time-bin", "30"}, "none (heuristic)"},
		{"dptime", []string{"--dptime-epsilon", "1", "--time-bin", "30"}, "pure-dp"},
	} {
		out := filepath.Join(dir, tc.mech+".csv")
		args := append([]string{"sanitize", "--mechanism", tc.mech, "--input", datasets.Path(t, "kidney_tte.csv"), "--output", out,
			"--cohorts", "1,2,3,4", "--time-max", "600"}, tc.extra...)
		o, e, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.mech, code, e)
		}
		if !strings.Contains(o, `"guarantee":"`+tc.guar+`"`) || !strings.Contains(o, `"records_in":76`) {
			t.Fatalf("%s summary: %s", tc.mech, o)
		}
		b, err := os.ReadFile(out)
		if err != nil || !strings.HasPrefix(string(b), "id,time,event,cohort\n") {
			t.Fatalf("%s output: %v %q", tc.mech, err, string(b[:min(len(b), 40)]))
		}
	}
}
