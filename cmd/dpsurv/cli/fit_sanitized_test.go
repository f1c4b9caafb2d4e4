package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

type kmMedians map[string][3]float64 // cohort -> median, lower, upper (NaN: null)

// parseKMMedians decodes a `fit km` JSON output: its top-level fields (the
// cohorts as raw JSON) and each cohort's median and interval (-1 for
// null). The curves are not decoded: a 20,000-record fit carries
// thousands of rows per cohort.
func parseKMMedians(t *testing.T, out string) (map[string]any, kmMedians) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	r := map[string]any{}
	for k, v := range top {
		if k == "cohorts" {
			r[k] = v
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("decode %s: %v", k, err)
		}
		r[k] = x
	}
	var cohorts []struct {
		Cohort      string   `json:"cohort"`
		Median      *float64 `json:"median"`
		MedianLower *float64 `json:"median_lower"`
		MedianUpper *float64 `json:"median_upper"`
	}
	if c, ok := top["cohorts"]; ok {
		if err := json.Unmarshal(c, &cohorts); err != nil {
			t.Fatalf("decode cohorts: %v", err)
		}
	}
	m := kmMedians{}
	f := func(v *float64) float64 {
		if v == nil {
			return -1
		}
		return *v
	}
	for _, c := range cohorts {
		m[c.Cohort] = [3]float64{f(c.Median), f(c.MedianLower), f(c.MedianUpper)}
	}
	return r, m
}

// sanitizeSynthetic writes the 20,000-record synthetic file (dpsurv gen,
// cohorts A, B, C, time_max 3650) and returns its path and its medians
// (R's KM, the non-private fit). The file is Arrow: it holds the values
// the CSV would (sanitizing either gives the same records) for less
// parsing.
func sanitizeSynthetic(t *testing.T, dir string) (string, kmMedians) {
	t.Helper()
	orig := filepath.Join(dir, "orig.arrow")
	if _, e, code := run(t, "gen", "--n", "20000", "--seed", "5", "--output", orig); code != 0 {
		t.Fatalf("gen: %s", e)
	}
	o := runOK(t, "fit", "km", "--input", orig, "--epsilon", "inf")
	_, truth := parseKMMedians(t, o)
	for _, l := range []string{"A", "B", "C"} {
		if truth[l][0] < 0 {
			t.Fatalf("cohort %s: the original data reach no median", l)
		}
	}
	return orig, truth
}

// TestFitKMSanitizedCoverage: `fit km` on a file written by `dpsurv
// sanitize` (cohort by RRR at epsilon 1 over 3 labels, time by the
// TE-Sanitizer at epsilon 0.5, window 10) uses the debiased estimator by
// default, says so, and its median intervals cover the original data's
// medians. The call is the one an analyst makes today (--epsilon inf,
// which on the old main was the naive KM labelled non-private).
//
// 10 seeds (PRF keys) x 3 cohorts = 30 intervals; at most 5 may miss: at a
// true coverage of 0.95 the false alarm is 0.34% (binomial(30, 0.05),
// P(X >= 6)). The intervals must be informative (each narrower than 40% of
// the median), or coverage would be trivial. The naive estimator (--naive)
// must miss at least 15 of the 30 (it misses every interval of A and C,
// which RRR pulls toward the pooled curve: A about 800 against 690).
//
// The first seed's sanitized file is CSV with its metadata sidecar, as the
// analyst's guide writes it; the others are Arrow (metadata in the
// schema), which give the same fits (TestFitKMSanitizedArrow) for less
// parsing.
func TestFitKMSanitizedCoverage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orig, truth := sanitizeSynthetic(t, dir)
	t.Logf("original medians: %v", truth)
	misses, naiveMisses, total := 0, 0, 0
	for seed := 1; seed <= 10; seed++ {
		key := filepath.Join(dir, fmt.Sprintf("key%d", seed))
		if err := os.WriteFile(key, []byte(strings.Repeat(fmt.Sprintf("%02x", seed), 32)), 0o600); err != nil {
			t.Fatal(err)
		}
		ext := "arrow"
		if seed == 1 {
			ext = "csv"
		}
		san := filepath.Join(dir, fmt.Sprintf("san%d.%s", seed, ext))
		if _, e, code := run(t, "sanitize", "--input", orig, "--output", san, "--cohorts", "A,B,C", "--time-max", "3650",
			"--rrr-epsilon", "1", "--te-epsilon", "0.5", "--key-file", key); code != 0 {
			t.Fatalf("sanitize: %s", e)
		}
		o, e, code := run(t, "fit", "km", "--input", san, "--epsilon", "inf", "--time-max", "3650")
		if code != 0 {
			t.Fatalf("fit km: %s", e)
		}
		r, got := parseKMMedians(t, o)
		if r["method"] != "rrr-debiased-km" || r["naive"] != false || !strings.Contains(fmt.Sprint(r["estimator"]), "debiased") ||
			!strings.Contains(e, "debiased") {
			t.Fatalf("seed %d: not the debiased estimator, or not said: method %v, estimator %v; stderr %s", seed, r["method"], r["estimator"], e)
		}
		o, _, code = run(t, "fit", "km", "--input", san, "--epsilon", "inf", "--time-max", "3650", "--naive")
		if code != 0 {
			t.Fatalf("fit km --naive: exit %d", code)
		}
		rn, naive := parseKMMedians(t, o)
		if rn["naive"] != true || !strings.Contains(fmt.Sprint(rn["estimator"]), "NAIVE") {
			t.Fatalf("the naive fit is not labelled: %v", rn["estimator"])
		}
		for _, l := range []string{"A", "B", "C"} {
			total++
			m, tr := got[l], truth[l][0]
			if w := m[2] - m[1]; !(m[1] >= 0 && w < 0.4*tr) {
				t.Errorf("seed %d cohort %s: median interval [%v, %v] is not informative", seed, l, m[1], m[2])
			}
			if !(m[1] >= 0 && m[1] <= tr && m[2] >= tr) {
				misses++
				t.Logf("seed %d cohort %s: median %v [%v, %v] misses %v", seed, l, m[0], m[1], m[2], tr)
			}
			n := naive[l]
			if !(n[1] >= 0 && n[1] <= tr && n[2] >= tr) {
				naiveMisses++
			}
		}
	}
	t.Logf("debiased: %d of %d median intervals miss; naive: %d", misses, total, naiveMisses)
	if misses > 5 {
		t.Errorf("debiased: %d of %d median intervals miss the original medians (at most 5 allowed)", misses, total)
	}
	if naiveMisses < 15 {
		t.Errorf("naive: only %d of %d intervals miss: the test has no power against the old behaviour", naiveMisses, total)
	}
}

// On a sanitized input the choices are explicit: another --method without
// --naive, a central --epsilon with --naive, an --epsilon other than the
// file's RRR epsilon, or a label list of another length are refused with a
// message saying what to do; --naive on an ordinary file is refused.
func TestFitKMSanitizedRefusals(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	san := filepath.Join(dir, "san.csv")
	if _, e, code := run(t, "sanitize", "--input", "../../../data/lung_tte.csv", "--output", san, "--cohorts", "1,2", "--time-max", "1100",
		"--rrr-epsilon", "1", "--key-file", key, "--public", "time,event"); code != 0 {
		t.Fatalf("sanitize: %s", e)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--method", "hierarchical", "--epsilon", "1"}, "--naive --epsilon inf"},
		{[]string{"--naive", "--epsilon", "1"}, "--naive is the non-private KM"},
		{[]string{"--epsilon", "2"}, "drop --epsilon"},
		{[]string{"--cohorts", "1,2,3"}, "over 2 labels"},
	} {
		_, e, code := run(t, append([]string{"fit", "km", "--input", san}, tc.args...)...)
		if code == 0 || !strings.Contains(e, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, e, tc.want)
		}
	}
	if _, e, code := run(t, "fit", "km", "--input", "../../../data/lung_tte.csv", "--epsilon", "inf", "--naive"); code == 0 || !strings.Contains(e, "--naive applies") {
		t.Errorf("--naive on an ordinary file: exit %d, %s", code, e)
	}
	// the file's own epsilon is accepted, and the horizon rule is applied
	o := runOK(t, "fit", "km", "--input", san, "--epsilon", "1", "--time-max", "500")
	r, _ := parseKMMedians(t, o)
	if c, _ := r["censored_at_horizon"].(float64); !(c > 0) || r["time_max_from"] != "--time-max" {
		t.Errorf("horizon rule: censored_at_horizon %v, time_max_from %v", r["censored_at_horizon"], r["time_max_from"])
	}
}

// The same data through the Arrow file and stream formats (time int64,
// cohort a dictionary, as the sanitized topic carries them) give the CSV's
// fit: on the old main every row of a sanitized Arrow input was skipped as
// wrong_schema.
func TestFitKMSanitizedArrow(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	var want string
	for _, ext := range []string{"csv", "arrow", "arrows"} {
		san := filepath.Join(dir, "san."+ext)
		if _, e, code := run(t, "sanitize", "--input", "../../../data/lung_tte.csv", "--output", san, "--cohorts", "1,2", "--time-max", "1100",
			"--rrr-epsilon", "1", "--te-epsilon", "0.5", "--key-file", key); code != 0 {
			t.Fatalf("sanitize %s: %s", ext, e)
		}
		o := runOK(t, "fit", "km", "--input", san, "--cohorts", "1,2", "--time-max", "1100")
		r, _ := parseKMMedians(t, o)
		if r["method"] != "rrr-debiased-km" || r["n"] != 210.0 {
			t.Fatalf("%s: method %v, n %v", ext, r["method"], r["n"])
		}
		b, _ := json.Marshal(r["cohorts"])
		if want == "" {
			want = string(b)
		} else if string(b) != want {
			t.Errorf("%s: the curves differ from the CSV's", ext)
		}
	}
}

// The demo's release from the sanitized topic is the debiased KM: on
// records sanitized as the demo's chain does (RRR at epsilon 1 on 3
// labels, TE at 0.5 with window 10), it says so and its median intervals
// cover the original data's medians (one seed; the coverage over seeds is
// TestFitKMSanitizedCoverage's, same estimator).
func TestDemoSanitizedKMDebiased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orig, truth := sanitizeSynthetic(t, dir)
	san := filepath.Join(dir, "san.arrows")
	if _, e, code := run(t, "sanitize", "--input", orig, "--output", san, "--cohorts", "A,B,C", "--time-max", "3650",
		"--rrr-epsilon", "1", "--te-epsilon", "0.5", "--key-file", apptest.KeyFile(t)); code != 0 {
		t.Fatalf("sanitize: %s", e)
	}
	d, err := readSanitizedArrow(san, []string{"A", "B", "C"}, schemas.DefaultColumns())
	if err != nil {
		t.Fatal(err)
	}
	eps, w := 1.0, 10
	gs := []sanitizers.Guarantee{{Field: "time", Mechanism: sanitizers.MechTE, Window: &w}, {Field: "cohort", Mechanism: sanitizers.MechRRR, Epsilon: &eps}}
	var buf strings.Builder
	curves, err := demoSanitizedKM(&buf, harness.Sanitized{Time: d.Time, Event: d.Event, Cohort: d.Cohort}, []string{"A", "B", "C"}, 3650, gs)
	if err != nil {
		t.Fatal(err)
	}
	o := buf.String()
	t.Log(o)
	if !strings.Contains(o, "debiased") || len(curves) != 3 {
		t.Fatalf("not the debiased release:\n%s", o)
	}
	for _, l := range []string{"A", "B", "C"} {
		var m, lo, hi float64
		line := o[strings.Index(o, "cohort "+l):]
		if _, err := fmt.Sscanf(line[strings.Index(line, "median survival"):], "median survival %g days (95%% CI %g–%g)", &m, &lo, &hi); err != nil {
			t.Fatalf("cohort %s: %v in %q", l, err, line)
		}
		if tr := truth[l][0]; !(lo <= tr && tr <= hi) {
			t.Errorf("cohort %s: median %v [%v, %v] misses the original %v", l, m, lo, hi, tr)
		}
	}
}
