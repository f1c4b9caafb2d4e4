package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd/configtest"
	"github.com/dpsurv/dpsurv/internal/datasets"
)

// runOK runs a command and returns its stdout, failing the test (with the
// command line and what it printed) unless it exits 0.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	o, e, code := run(t, args...)
	if code != 0 {
		t.Fatalf("dpsurv %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, o, e)
	}
	return o
}

// runJSON runs a command that prints one JSON object and returns it,
// failing the test unless the command exits 0 with such an object.
func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	o := runOK(t, args...)
	var doc map[string]any
	if err := json.Unmarshal([]byte(o), &doc); err != nil {
		t.Fatalf("dpsurv %s: %v: %s", strings.Join(args, " "), err, o)
	}
	return doc
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestSanitizeJSONAndReplayStability(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	args := func(out string) []string {
		return []string{"sanitize", "--input", datasets.Path(t, "kidney_tte.csv"), "--output", out,
			"--cohorts", "1,2,3", "--time-max", "600", "--te-epsilon", "0.1", "--te-window", "10",
			"--rrr-epsilon", "1", "--key-file", key, "--max-skipped", "0.2"} // cohort 4's 8 rows of 76 dead-lettered on purpose
	}
	o1 := runOK(t, args(filepath.Join(dir, "a.csv"))...)
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
	key := apptest.KeyFile(t)
	cfg := configtest.Config{Key: key}.YAML()
	p := configtest.Write(t, filepath.Join(dir, "c.yaml"), cfg)
	o, e, code := run(t, "run", "--config", p, "--dry-run")
	if code != 0 || !strings.Contains(o, `"config":"ok"`) || !strings.Contains(o, "worst_case_loss") {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	// Missing key: refuses to start.
	configtest.Write(t, p, strings.Replace(cfg, "key_file: "+key, "key_file: "+filepath.Join(dir, "absent"), 1))
	_, e, code = run(t, "run", "--config", p, "--dry-run")
	if code == 0 || !strings.Contains(e, "sanitizers.key_file") {
		t.Fatalf("missing key: exit %d, %s", code, e)
	}
	// A config error names its field.
	configtest.Write(t, p, strings.Replace(cfg, "input: {topic: in}", "input: {topik: in}", 1))
	_, e, code = run(t, "run", "--config", p, "--dry-run")
	if code == 0 || !strings.Contains(e, "input.topik: unknown field") {
		t.Fatalf("unknown field: exit %d, %s", code, e)
	}
}

func TestDemoRunsEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := runOK(t, "demo", "--n", "3000", "--out-dir", dir, "--duration", "60s")
	for _, want := range []string{"EPHEMERAL", "sanitized: 3001 records", "dead letters: 4", "duplicate_id:1", "undecodable:1", "median survival",
		"central releases on the fit topic", "km-demo", "weibull-demo", "pure-dp", "stream budget left"} {
		if !strings.Contains(o, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, o)
		}
	}
	// the per-patient statement the service published, as `dpsurv
	// statement` computes it for the demo's configuration
	cfg := demoConfig([]string{"127.0.0.1:1"}, []string{"A", "B", "C"}, 3650)
	demoAggregators(&cfg, demoWindow)
	st, err := app.Statement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("one patient, everything this service publishes: at most %.2f with one version of the record, %.2f with two\n",
		*st.TotalOneVersion, *st.TotalTwoVersions)
	if !strings.Contains(o, "per-patient privacy statement on the fit topic (key patient_statement") || !strings.Contains(o, want) {
		t.Fatalf("demo output lacks the privacy statement %q:\n%s", want, o)
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
		o := runOK(t, args...)
		if !strings.Contains(o, `"guarantee":"`+tc.guar+`"`) || !strings.Contains(o, `"records_in":76`) {
			t.Fatalf("%s summary: %s", tc.mech, o)
		}
		b, err := os.ReadFile(out)
		if err != nil || !strings.HasPrefix(string(b), "id,time,event,cohort\n") {
			t.Fatalf("%s output: %v %q", tc.mech, err, string(b[:min(len(b), 40)]))
		}
	}
}

// `dpsurv sanitize` runs the stream's processor: its dead letters are the
// dead-letter topic's JSON, the source position being the input's base
// name, partition 0 and the batch number; row_index counts data rows
// over the whole file. A file of bad rows only still gets its header.
func TestSanitizeDeadLettersAsOnTheTopic(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	in := filepath.Join(dir, "in.csv")
	body := "id,time,event,cohort\np1,5,1,1\np2,6,0,9\np3,7,1,2\np4,x,1,1\np5,9,0,2\n"
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	sanitize := func(input, output string) SanitizeSummary {
		t.Helper()
		o := runOK(t, "sanitize", "--input", input, "--output", output, "--cohorts", "1,2",
			"--time-max", "100", "--te-epsilon", "0.5", "--rrr-epsilon", "1", "--key-file", key, "--batch", "2",
			"--max-skipped", "1") // 2 of 5 rows bad on purpose
		var sum SanitizeSummary
		if err := json.Unmarshal([]byte(o), &sum); err != nil {
			t.Fatalf("summary: %v\n%s", err, o)
		}
		return sum
	}
	sum := sanitize(in, filepath.Join(dir, "out.csv"))
	if sum.RecordsIn != 5 || sum.RecordsOut != 3 || sum.DeadLettered != 2 ||
		sum.DeadLetterReasons["unknown_cohort"] != 1 || sum.DeadLetterReasons["invalid_time"] != 1 {
		t.Fatalf("summary %+v", sum)
	}
	dl, err := os.ReadFile(filepath.Join(dir, "out.csv.deadletter.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(dl), "\n"), "\n")
	want := []struct {
		reason   string
		rowIndex int
		offset   int64
	}{{"unknown_cohort", 1, 0}, {"invalid_time", 3, 1}}
	if len(lines) != len(want) {
		t.Fatalf("%d dead letters, want %d:\n%s", len(lines), len(want), dl)
	}
	for i, line := range lines {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		var keys []string
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if got := strings.Join(keys, ","); got != "detail,raw_base64,reason,row,row_index,source" {
			t.Errorf("line %d keys %s, want the dead-letter topic's", i, got)
		}
		var d struct {
			Reason   string         `json:"reason"`
			RowIndex int            `json:"row_index"`
			Row      map[string]any `json:"row"`
			Source   struct {
				Topic     string `json:"topic"`
				Partition int    `json:"partition"`
				Offset    int64  `json:"offset"`
			} `json:"source"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		w := want[i]
		if d.Reason != w.reason || d.RowIndex != w.rowIndex || d.Row == nil ||
			d.Source.Topic != "in.csv" || d.Source.Partition != 0 || d.Source.Offset != w.offset {
			t.Errorf("line %d: %+v, want reason %s, row_index %d, the row, source in.csv/0/%d", i, d, w.reason, w.rowIndex, w.offset)
		}
	}

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("id,time,event,cohort\nq1,5,1,9\nq2,x,0,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if sum := sanitize(bad, filepath.Join(dir, "bad-out.csv")); sum.RecordsIn != 2 || sum.RecordsOut != 0 || sum.DeadLettered != 2 {
		t.Fatalf("bad rows only: summary %+v", sum)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "bad-out.csv")); err != nil || string(got) != "id,time,cohort,event\n" {
		t.Fatalf("bad rows only: output %q (%v), want the header", got, err)
	}
}
