package cli

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/internal/datasets"
)

// readGolden reads a CSV file with a header row: one map per row, column
// name to value.
func readGolden(t *testing.T, path string) []map[string]string {
	t.Helper()
	return datasets.ReadFile(t, path).Records()
}

func closeTo(t *testing.T, what string, got any, want string, tol float64) {
	t.Helper()
	if want == "NA" || want == "Inf" || want == "-Inf" { // JSON has no NA or infinity: null
		if got != nil {
			t.Fatalf("%s: got %v, want NA (null)", what, got)
		}
		return
	}
	w, _ := strconv.ParseFloat(want, 64)
	g, ok := got.(float64)
	if !ok {
		t.Fatalf("%s: got %v (%T), want %v", what, got, got, w)
	}
	if math.Abs(g-w) > tol*math.Max(1, math.Abs(w)) {
		t.Fatalf("%s: got %.12g, want %.12g", what, g, w)
	}
}

// TestFitKMInfMatchesR checks the command's JSON, end to end from the CSV,
// against R's survfit / survdiff golden files (survival/testdata, made by
// scripts/golden_km.R).
func TestFitKMInfMatchesR(t *testing.T) {
	for _, ds := range []struct {
		name, cohorts string
	}{{"kidney", "1,2,3,4"}, {"lung", "1,2"}} {
		o, e, code := run(t, "fit", "km", "--input", datasets.Path(t, ds.name+"_tte.csv"), "--cohorts", ds.cohorts, "--epsilon", "inf")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", ds.name, code, e)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(o), &res); err != nil {
			t.Fatal(err)
		}
		// the fit topic's names and types: epsilon a number or null (the
		// non-private reference), neighbouring always a string
		if e, ok := res["epsilon"]; !ok || e != nil || res["guarantee"] != "none (non-private)" || res["neighbouring"] != "none (non-private)" {
			t.Fatalf("metadata %v %v %v", res["epsilon"], res["guarantee"], res["neighbouring"])
		}
		cohorts := res["cohorts"].([]any)
		if len(cohorts) != len(strings.Split(ds.cohorts, ",")) {
			t.Fatalf("%d cohorts", len(cohorts))
		}
		medians := readGolden(t, "../../../survival/testdata/km_medians.csv")
		for _, c := range cohorts {
			cm := c.(map[string]any)
			label := cm["cohort"].(string)
			if cm["conf_type"] != "log" || cm["conf"] != 0.95 { // R's default conf.type, stated
				t.Fatalf("%s/%s: conf_type %v conf %v, want log 0.95", ds.name, label, cm["conf_type"], cm["conf"])
			}
			golden := readGolden(t, "../../../survival/testdata/km_"+ds.name+"_"+label+".csv")
			times := cm["time"].([]any)
			if len(times) != len(golden) {
				t.Fatalf("%s/%s: %d times, R has %d", ds.name, label, len(times), len(golden))
			}
			for i, g := range golden {
				for _, f := range []struct {
					json, csv string
					tol       float64
				}{
					{"time", "time", 1e-12}, {"n_risk", "n_risk", 1e-12}, {"n_event", "n_event", 1e-12},
					{"surv", "surv", 1e-9}, {"std_err", "std_err", 1e-6}, {"lower", "lower", 1e-6}, {"upper", "upper", 1e-6},
				} {
					closeTo(t, ds.name+"/"+label+"/"+f.json+"["+strconv.Itoa(i)+"]", cm[f.json].([]any)[i], g[f.csv], f.tol)
				}
			}
			for _, m := range medians {
				if m["dataset"] == ds.name && m["cohort"] == label {
					closeTo(t, "median", cm["median"], m["median"], 1e-9)
					closeTo(t, "median_lower", cm["median_lower"], m["lower"], 1e-6)
					closeTo(t, "median_upper", cm["median_upper"], m["upper"], 1e-6)
				}
			}
		}
		for _, g := range readGolden(t, "../../../survival/testdata/logrank_overall.csv") {
			if g["dataset"] == ds.name {
				lr := res["logrank"].(map[string]any)
				closeTo(t, "chisq", lr["chisq"], g["chisq"], 1e-9)
				closeTo(t, "p", lr["p"], g["p"], 1e-6)
			}
		}
		if _, top := res["pairwise"]; top {
			t.Fatal("pairwise at the top level: the fit topic has it in logrank.pairwise")
		}
		pw := res["logrank"].(map[string]any)["pairwise"].([]any)
		n := 0
		for _, g := range readGolden(t, "../../../survival/testdata/logrank_pairwise.csv") {
			if g["dataset"] != ds.name {
				continue
			}
			for _, p := range pw {
				pm := p.(map[string]any)
				if (pm["a"] == g["a"] && pm["b"] == g["b"]) || (pm["a"] == g["b"] && pm["b"] == g["a"]) {
					closeTo(t, "pairwise chisq", pm["chisq"], g["chisq"], 1e-9)
					closeTo(t, "pairwise p", pm["p"], g["p"], 1e-6)
					n++
				}
			}
		}
		if n == 0 {
			t.Fatalf("%s: no pairwise comparisons matched", ds.name)
		}
	}
}

func TestFitPrivateKMAndWeibull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o, e, code := run(t, "fit", "km", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "1",
		"--time-max", "1100", "--bin-width", "10", "--plot", dir+"/km.svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(o), &res); err != nil {
		t.Fatal(err)
	}
	if res["guarantee"] != "pure-dp" || res["epsilon"] != 1.0 || res["neighbouring"] == nil {
		t.Fatalf("metadata: %v %v %v", res["guarantee"], res["epsilon"], res["neighbouring"])
	}
	for _, c := range res["cohorts"].([]any) {
		surv := c.(map[string]any)["surv"].([]any)
		prev := 1.0
		for _, s := range surv {
			v := s.(float64)
			if v > prev+1e-12 || v < 0 {
				t.Fatalf("private curve not monotone in [0,1]: %v after %v", v, prev)
			}
			prev = v
		}
	}
	if _, err := os.Stat(dir + "/km.svg"); err != nil {
		t.Fatal(err)
	}
	// The release document (issue 12): noise-aware interval beside the
	// sampling-only one, calibrated log-rank with the naive p kept apart.
	for _, c := range res["cohorts"].([]any) {
		cm := c.(map[string]any)
		lo, slo := cm["lower"].([]any), cm["sampling_lower"].([]any)
		if len(lo) != len(slo) || len(lo) == 0 {
			t.Fatalf("lower %d rows, sampling_lower %d", len(lo), len(slo))
		}
		for i := range lo {
			if lo[i] != nil && slo[i] != nil && lo[i].(float64) > slo[i].(float64)+1e-12 {
				t.Fatalf("row %d: lower %v above the sampling-only %v", i, lo[i], slo[i])
			}
		}
		if _, ok := cm["low_information"].(bool); !ok || cm["n"].(float64) < 0 {
			t.Fatalf("low_information %v, n %v", cm["low_information"], cm["n"])
		}
		if cm["median"] == nil && cm["median_note"] == "" {
			t.Fatal("a null median without a note")
		}
	}
	lr := res["logrank"].(map[string]any)
	p, ok := lr["p"].(float64)
	if !ok { // at the Monte-Carlo floor: a bound, p null
		p, ok = lr["p_upper"].(float64)
	}
	if !ok || p <= 0 || p > 1 || lr["df"] != 1.0 || !strings.HasPrefix(lr["calibration"].(string), "monte-carlo") {
		t.Fatalf("logrank %v", lr)
	}
	if _, ok := lr["p_naive"].(float64); !ok {
		t.Fatalf("logrank p_naive %v", lr["p_naive"])
	}
	// Without --bin-width the bin width is time-max/150.
	o, e, code = run(t, "fit", "km", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "1", "--time-max", "1100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	res = nil
	if err := json.Unmarshal([]byte(o), &res); err != nil {
		t.Fatal(err)
	}
	if bw := res["bin_width"].(float64); math.Abs(bw-1100.0/150) > 1e-12 {
		t.Fatalf("default bin width %v, want %v", bw, 1100.0/150)
	}
	// A private fit without the public bound is refused.
	if _, _, code := run(t, "fit", "km", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "1"); code != 2 {
		t.Fatalf("missing --time-max: exit %d", code)
	}
	if _, _, code := run(t, "fit", "km", "--input", "x", "--cohorts", "1", "--epsilon", "-1"); code != 2 {
		t.Fatalf("negative epsilon: exit %d", code)
	}
	o, e, code = run(t, "fit", "weibull", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "2", "--time-max", "1100")
	if code != 0 {
		t.Fatalf("weibull exit %d: %s", code, e)
	}
	res = nil
	json.Unmarshal([]byte(o), &res)
	if res["method"] != "lsp" || res["guarantee"] != "pure-dp" || res["shape"].(float64) <= 0 || res["scale"].(float64) <= 0 {
		t.Fatalf("weibull: %v", res)
	}
}

// TestFitKMRRRDebiasesSanitizedLabels sanitizes a file with RRR only and
// fits the debiased KM from it: the reported curves are pulled toward each
// other, the debiased ones much less.
func TestFitKMRRRDebiasesSanitizedLabels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	san := dir + "/s.csv"
	if _, e, code := run(t, "gen", "--n", "20000", "--cohorts", "A,B", "--output", dir+"/in.csv", "--seed", "3"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := run(t, "sanitize", "--input", dir+"/in.csv", "--output", san, "--cohorts", "A,B", "--time-max", "3650",
		"--rrr-epsilon", "1", "--public", "event,time", "--key-file", key); code != 0 {
		t.Fatal(e)
	}
	median := func(args ...string) []float64 {
		o := runOK(t, append([]string{"fit", "km", "--input", san, "--cohorts", "A,B", "--time-max", "3650", "--bin-width", "30"}, args...)...)
		var res struct {
			Guarantee string `json:"guarantee"`
			Cohorts   []struct {
				Median float64 `json:"median"`
			} `json:"cohorts"`
		}
		json.Unmarshal([]byte(o), &res)
		var m []float64
		for _, c := range res.Cohorts {
			m = append(m, c.Median)
		}
		return m
	}
	raw := median("--epsilon", "inf", "--naive") // the default on a sanitized file is the debiased fit
	deb := median("--epsilon", "1", "--method", "rrr")
	truth := runOK(t, "fit", "km", "--input", dir+"/in.csv", "--cohorts", "A,B", "--epsilon", "inf")
	var tr struct {
		Cohorts []struct {
			Median float64 `json:"median"`
		} `json:"cohorts"`
	}
	json.Unmarshal([]byte(truth), &tr)
	gapTrue := tr.Cohorts[1].Median - tr.Cohorts[0].Median
	gapRaw, gapDeb := raw[1]-raw[0], deb[1]-deb[0]
	// RRR at epsilon 1 with 2 labels keeps the true label with p+(1-p)/2 = 0.73:
	// the raw gap shrinks to roughly half; debiasing restores most of it.
	if !(gapRaw < 0.75*gapTrue) || math.Abs(gapDeb-gapTrue) > 0.35*gapTrue {
		t.Fatalf("median gap: true %.0f, reported %.0f, debiased %.0f", gapTrue, gapRaw, gapDeb)
	}
}
