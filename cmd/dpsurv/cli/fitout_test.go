package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/internal/datasets"
)

// fitCommands are one command line per fit and privacy mode, on the
// repository's lung data (the commands docs/analysts.md shows).
func fitCommands(t *testing.T) map[string][]string {
	lung := datasets.Path(t, "lung_tte.csv")
	return map[string][]string{
		"km/inf":       {"fit", "km", "--input", lung, "--epsilon", "inf"},
		"km/1":         {"fit", "km", "--input", lung, "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100"},
		"weibull/inf":  {"fit", "weibull", "--input", lung, "--epsilon", "inf", "--time-max", "1100"},
		"weibull/1":    {"fit", "weibull", "--input", lung, "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100", "--interval-sims", "40"},
		"discrete/inf": {"fit", "discrete", "--input", lung, "--epsilon", "inf", "--covariates", "age,ph.karno", "--centre", "62,82", "--scale", "10,12", "--time-max", "1100"},
		"discrete/2": {"fit", "discrete", "--input", lung, "--epsilon", "2", "--cohorts", "1,2", "--time-max", "1100",
			"--covariates", "age,ph.karno", "--centre", "62,82", "--scale", "10,12"},
		"cox/inf": {"fit", "cox", "--input", lung, "--epsilon", "inf", "--covariates", "age,ph.karno"},
	}
}

// garbage matches a number a person should not be shown: more than 7
// significant digits, or a magnitude beyond 1e15 written out.
var garbage = regexp.MustCompile(`\d\.\d{8,}|\d{16,}|e\+(1[5-9]|[2-9]\d|\d{3})|e-(1[7-9]|[2-9]\d|\d{3})`)

// TestFitFormatTableEveryFit runs --format table for every fit, private and
// non-private, and checks what a person must be told: rounded numbers, the
// interval type (KM), noise against sampling error in words (private),
// exp(coef) with its interval (Cox), standard errors (Weibull, discrete).
// On the old main --format accepted only json.
func TestFitFormatTableEveryFit(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"km/inf":       {"conf.type \"log\" (R survfit's default", "0.95LCL", "Log-rank test: Chisq = ", "Non-private"},
		"km/1":         {"conf.type \"log-log\"", "se(sampling)", "se(noise)", "privacy noise", "calibrated for the noise", "repeated runs add up"},
		"weibull/inf":  {"se(log)", "Wald intervals", "shape", "scale (days)"},
		"weibull/1":    {"noise-aware", "sampling error and the privacy noise", "Event count (noisy)"},
		"discrete/inf": {"Std. Error", "Pr(>|z|)", "lower .95", "observed information"},
		"discrete/2":   {"estimate", "privacy noise", "exp(beta)"},
		"cox/inf":      {"exp(coef)", "exp(-coef)", "lower .95", "upper .95", "Likelihood ratio test", "se(coef)"},
	}
	for name, args := range fitCommands(t) {
		t.Run(name, func(t *testing.T) {
			o := runOK(t, append(args, "--format", "table")...)
			for _, w := range want[name] {
				if !strings.Contains(o, w) {
					t.Errorf("table lacks %q:\n%s", w, o)
				}
			}
			if g := garbage.FindString(o); g != "" {
				t.Errorf("unrounded or garbage number %q in the table:\n%s", g, o)
			}
		})
	}
}

// TestFitFormatCSVEveryFit checks that --format csv is one rectangular
// table readable by read.csv (numbers or NA) for every fit, and that the
// non-private KM's numbers are the JSON's (15 significant digits).
func TestFitFormatCSVEveryFit(t *testing.T) {
	t.Parallel()
	for name, args := range fitCommands(t) {
		t.Run(name, func(t *testing.T) {
			o, e, code := run(t, append(args, "--format", "csv")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, e)
			}
			rows, err := csv.NewReader(strings.NewReader(o)).ReadAll()
			if err != nil {
				t.Fatalf("not CSV: %v\n%s", err, o)
			}
			if len(rows) < 2 {
				t.Fatalf("%d rows", len(rows))
			}
			for i, r := range rows[1:] {
				for j, v := range r {
					h := rows[0][j]
					if h == "cohort" || h == "term" || h == "unit" || h == "conf_type" || v == "NA" || v == "" {
						continue
					}
					if _, err := strconv.ParseFloat(v, 64); err != nil {
						t.Fatalf("row %d column %s: %q is neither a number nor NA", i+1, h, v)
					}
					if len(strings.TrimLeft(strings.SplitN(strings.NewReplacer(".", "", "-", "").Replace(v), "e", 2)[0], "0")) > 15 {
						t.Fatalf("row %d column %s: %q has more than 15 significant digits", i+1, h, v)
					}
				}
			}
		})
	}
	o, _, _ := run(t, fitCommands(t)["km/inf"]...)
	var doc map[string]any
	if err := json.Unmarshal([]byte(o), &doc); err != nil {
		t.Fatal(err)
	}
	c, _, _ := run(t, append(fitCommands(t)["km/inf"], "--format", "csv")...)
	rows, _ := csv.NewReader(strings.NewReader(c)).ReadAll()
	first := doc["cohorts"].([]any)[0].(map[string]any)
	for i, k := range []string{"time", "n_risk", "n_event", "n_censor", "surv", "std_err", "lower", "upper"} {
		got, _ := strconv.ParseFloat(rows[1][i+1], 64)
		want := first[k].([]any)[0].(float64)
		if math.Abs(got-want) > 1e-14*math.Max(1, math.Abs(want)) {
			t.Errorf("csv %s = %v, json %v", k, got, want)
		}
	}
}

// jsonKeys is the set of keys of v's JSON object.
func jsonKeys(t *testing.T, v any) map[string]bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// cliOnly are the CLI document's fields the fit topic has no use for
// (docs/analysts.md lists them): a CLI document holds every cohort of one
// fit on a file, the topic one cohort of one window.
var cliOnly = map[string]bool{
	"cohorts": true, "epsilon_total": true, // km: the cohort list; the budget of the run
	"scale_time_units": true, "time_max_from_data": true, "omega": true, "clamped_times": true, "n_event": true, // non-private weibull
	"log_scale_se": true, "log_shape_se": true, // non-private weibull Wald
	"censored_at_horizon_note": true, // why a private file fit withholds censored_at_horizon
	"budget":                   true, // the file-fit privacy budget (--budget-file) or the note that runs add up
	// a fit of a sanitized input
	"sanitized_input": true, "estimator": true, "naive": true, "time_max_from": true, "epsilon_spent": true,
}

// TestFitJSONUsesTopicNames checks the CLI JSON against the fit topic's
// message (aggregators.FitMessage): every field the CLI prints for km and
// weibull exists on the topic under the same name (or is a documented
// CLI-only field), the log-rank's pairwise list is inside logrank, epsilon
// is a number or null and neighbouring a string. The old main printed
// pairwise at the top level, epsilon "inf" and neighbouring null.
func TestFitJSONUsesTopicNames(t *testing.T) {
	df := 1
	topic := jsonKeys(t, aggregators.FitMessage{
		BinWidth: 1, KMFields: &aggregators.KMFields{LogRank: &aggregators.LogRank{DF: &df}},
		WeibullFields: &aggregators.WeibullFields{ScaleLimitNote: "x"},
	})
	cohortKeys := jsonKeys(t, aggregators.KMFields{})
	lrKeys := jsonKeys(t, aggregators.LogRank{Note: "x"})
	pwKeys := jsonKeys(t, aggregators.PairwiseLogRank{})
	for name, args := range fitCommands(t) {
		if !strings.HasPrefix(name, "km/") && !strings.HasPrefix(name, "weibull/") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			doc := runJSON(t, args...)
			for k := range doc {
				if !topic[k] && !cliOnly[k] {
					t.Errorf("field %q is not a fit-topic field (nor a documented CLI-only one)", k)
				}
			}
			if e, ok := doc["epsilon"]; !ok {
				t.Error("no epsilon")
			} else if _, num := e.(float64); !num && e != nil {
				t.Errorf("epsilon %v (%T): want a number or null", e, e)
			}
			if _, ok := doc["neighbouring"].(string); !ok {
				t.Errorf("neighbouring %v: want a string", doc["neighbouring"])
			}
			if _, ok := doc["time_unit"].(string); !ok {
				t.Errorf("time_unit %v", doc["time_unit"])
			}
			for _, c := range fmaps(doc, "cohorts") {
				for k := range c {
					// low_information is per message on the topic (one message
					// per cohort), per cohort on the CLI
					if !cohortKeys[k] && k != "cohort" && k != "n" && !(topic[k] && strings.HasPrefix(k, "low_information")) {
						t.Errorf("cohort field %q is not a fit-topic km field", k)
					}
				}
			}
			if lr, ok := doc["logrank"].(map[string]any); ok {
				for k := range lr {
					if !lrKeys[k] {
						t.Errorf("logrank field %q is not on the topic", k)
					}
				}
				for _, p := range fmaps(lr, "pairwise") {
					for k := range p {
						if !pwKeys[k] {
							t.Errorf("pairwise field %q is not on the topic", k)
						}
					}
				}
			}
			if strings.HasPrefix(name, "weibull/1") {
				if _, ok := doc["params"].(map[string]any); !ok {
					t.Errorf("params %v: want an object, as on the topic", doc["params"])
				}
			}
		})
	}
}

// TestFitDiscreteCoxJSONSchema checks the regression fits' JSON: epsilon
// null (not "inf") for the non-private fits, neighbouring a string, and the
// R summary columns present.
func TestFitDiscreteCoxJSONSchema(t *testing.T) {
	for name, want := range map[string][]string{
		"discrete/inf": {"alpha_se", "beta_se", "beta_z", "beta_p", "beta_lower", "beta_upper", "alpha_lower", "alpha_upper", "coefficient_interval_method"},
		"cox/inf":      {"exp_coef", "exp_coef_lower", "exp_coef_upper", "conf", "se", "z", "p", "lr_test"},
	} {
		doc := runJSON(t, fitCommands(t)[name]...)
		if v, ok := doc["epsilon"]; !ok || v != nil || doc["neighbouring"] != "none (non-private)" {
			t.Errorf("%s: epsilon %v neighbouring %v", name, doc["epsilon"], doc["neighbouring"])
		}
		for _, k := range want {
			if _, ok := doc[k]; !ok {
				t.Errorf("%s: no %s", name, k)
			}
		}
	}
}

// TestFitWeibullInfWaldMatchesR checks the non-private Weibull's standard
// errors and Wald limits, end to end from the CSV, against survreg
// (survival/testdata/weibull_se_golden.json, scripts/golden_summary.R: the
// file's largest time as time_max, times clamped into [exp(-6), 1]).
func TestFitWeibullInfWaldMatchesR(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "survival", "testdata", "weibull_se_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []map[string]any `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range g.Cases {
		if c["dataset"] != "lung" {
			continue
		}
		// the golden's time_max is the file's largest time, as the CLI's
		// default for the whole file; a cohort's fit is given it
		args := []string{"fit", "weibull", "--input", datasets.Path(t, "lung_tte.csv"), "--epsilon", "inf",
			"--time-max", strconv.FormatFloat(c["time_max"].(float64), 'g', -1, 64)}
		if s := c["subset"].(string); s != "all" {
			args = append(args, "--cohorts", "1,2", "--cohort", strings.TrimPrefix(s, "cohort="))
		}
		doc := runJSON(t, args...)
		for k, r := range map[string]string{"log_scale_se": "se_intercept", "log_shape_se": "se_log_sigma", "shape": "shape", "scale": "scale",
			"shape_lower": "shape_lower", "shape_upper": "shape_upper", "scale_lower": "scale_lower", "scale_upper": "scale_upper"} {
			got, want := doc[k].(float64), c[r].(float64)
			if math.Abs(got-want) > 1e-6*math.Abs(want) {
				t.Errorf("%v %s = %.10g, R %.10g", c["subset"], k, got, want)
			}
		}
		n++
	}
	if n < 3 {
		t.Fatalf("%d lung cases", n)
	}
}

// TestFitKMPValueFloorIsBound: a calibrated log-rank p at its Monte-Carlo
// floor 1/200 is released as p_upper with p null, in JSON and as "< 0.005"
// in the table (the old main printed "p": 0.005).
func TestFitKMPValueFloorIsBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("id,time,event,cohort\n")
	for i := 0; i < 400; i++ {
		tm := 10 + (i%40)*2 // cohort 1 dies early, cohort 2 late
		c := 1
		if i%2 == 1 {
			tm, c = 300+(i%40)*5, 2
		}
		fmt.Fprintf(&sb, "%d,%d,1,%d\n", i+1, tm, c)
	}
	in := filepath.Join(dir, "split.csv")
	if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"fit", "km", "--input", in, "--epsilon", "4", "--cohorts", "1,2", "--time-max", "600"}
	doc := runJSON(t, args...)
	lr := doc["logrank"].(map[string]any)
	if v, ok := lr["p"]; !ok || v != nil || lr["p_upper"] != 0.005 {
		t.Fatalf("p %v p_upper %v: want null and 0.005 (a bound)", lr["p"], lr["p_upper"])
	}
	pw := fmaps(lr, "pairwise")
	if len(pw) != 1 || pw[0]["p"] != nil || pw[0]["p_upper"] != 0.005 {
		t.Fatalf("pairwise %v", pw)
	}
	o, _, _ := run(t, append(args, "--format", "table")...)
	if !strings.Contains(o, "p < 0.0050") && !strings.Contains(o, "p < 0.005") {
		t.Fatalf("table does not print the bound:\n%s", o)
	}
}

// TestFitTableLowInformation renders h1's low_information flag and reason
// wherever a document or a cohort carries it.
func TestFitTableLowInformation(t *testing.T) {
	doc := map[string]any{"epsilon": 1.0, "guarantee": "pure-dp", "method": "lsp", "shape": 3.0, "scale": 0.5, "time_max": 100.0,
		"low_information": true, "low_information_reason": "the shape interval spans the whole public range [0, gamma]"}
	var sb strings.Builder
	if err := emitFit(&sb, formatTable, "weibull", doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "LOW INFORMATION: the shape interval spans the whole public range") {
		t.Fatalf("no flag:\n%s", sb.String())
	}
	km := map[string]any{"epsilon": 1.0, "method": "x", "time_max": 10.0, "bin_width": 1.0, "cohorts": []any{
		map[string]any{"cohort": "A", "n": 3.0, "low_information": true, "low_information_threshold": 20.0, "time": []any{0.0}, "surv": []any{1.0}},
	}}
	sb.Reset()
	if err := emitFit(&sb, formatTable, "km", km); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "LOW INFORMATION (cohort A): its noisy record count is below the public threshold 20.0") {
		t.Fatalf("no flag:\n%s", sb.String())
	}
	// h1's censoring and clipping counts, where a document carries them
	km["censored_at_horizon"] = 12.0
	sb.Reset()
	if err := emitFit(&sb, formatTable, "km", km); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "Censored at the horizon: 12 records followed beyond time_max = 10") {
		t.Fatalf("no censoring note:\n%s", sb.String())
	}
}

// TestFitFormatRefused: an unknown --format is a usage error naming the
// choices.
func TestFitFormatRefused(t *testing.T) {
	_, e, code := run(t, "fit", "km", "--input", datasets.Path(t, "lung_tte.csv"), "--epsilon", "inf", "--format", "xml")
	if code == 0 || !strings.Contains(e, "json, table or csv") {
		t.Fatalf("exit %d: %s", code, e)
	}
}

// TestAnalystsDocTablesCurrent checks that every non-private `--format
// table` output shown in docs/analysts.md is what the command prints now
// (the private ones draw fresh noise: the doc says they are one run, and
// doccmd runs their commands). A block is a ```console fence whose first
// line is "$ dpsurv fit ... --format table".
func TestAnalystsDocTablesCurrent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "analysts.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```console\n\\$ (dpsurv fit [^\n]*--format table[^\n]*)\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	models := map[string]bool{}
	checked := 0
	for _, m := range blocks {
		args := strings.Fields(m[1])[1:]
		models[args[1]] = true
		if !strings.Contains(m[1], "--epsilon inf") {
			continue
		}
		for i, a := range args {
			if a == "--input" {
				args[i+1] = filepath.Join("..", "..", "..", args[i+1])
			}
		}
		o := runOK(t, args...)
		if o != m[2] {
			t.Errorf("docs/analysts.md shows for %q:\n%s\nthe command prints:\n%s", m[1], m[2], o)
		}
		checked++
	}
	var got []string
	for k := range models {
		got = append(got, k)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "cox,discrete,km,weibull" || checked < 4 {
		t.Fatalf("docs/analysts.md shows --format table for %v (%d non-private checked); want every fit", got, checked)
	}
}

// TestFitKMTableMatchesR checks the non-private km table, row by row,
// against R: print(survfit) (n, events, median, 0.95LCL, 0.95UCL) and
// summary(survfit, times = ...) (n.risk, survival, std.err, lower, upper),
// rounded as the table rounds (survival/testdata/km_print_summary.csv and
// km_times_summary.csv, scripts/golden_summary.R).
func TestFitKMTableMatchesR(t *testing.T) {
	prints := readGolden(t, "../../../survival/testdata/km_print_summary.csv")
	times := readGolden(t, "../../../survival/testdata/km_times_summary.csv")
	rnum := func(s string) float64 {
		if s == "NA" {
			return math.NaN()
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("golden %q", s)
		}
		return v
	}
	for _, ds := range []string{"lung", "kidney"} {
		o := runOK(t, "fit", "km", "--input", datasets.Path(t, ds+"_tte.csv"), "--epsilon", "inf", "--format", "table")
		lines := strings.Split(o, "\n")
		find := func(prefix []string) string {
			for _, l := range lines {
				f := strings.Fields(l)
				if len(f) >= len(prefix) && strings.Join(f[:len(prefix)], " ") == strings.Join(prefix, " ") {
					return strings.Join(f, " ")
				}
			}
			return ""
		}
		n := 0
		for _, g := range prints {
			if g["dataset"] != ds {
				continue
			}
			want := strings.Join([]string{g["cohort"], count(rnum(g["n"])), count(rnum(g["events"])), plain(rnum(g["median"])),
				plain(rnum(g["lcl"])), plain(rnum(g["ucl"]))}, " ")
			if got := find(strings.Fields(want)[:3]); got != want {
				t.Errorf("%s: print row %q, R %q", ds, got, want)
			}
			n++
		}
		for _, g := range times {
			if g["dataset"] != ds {
				continue
			}
			want := strings.Join([]string{g["cohort"], plain(rnum(g["time"])), count(rnum(g["n_risk"])), prob(rnum(g["surv"])),
				sig(rnum(g["std_err"]), 2), prob(rnum(g["lower"])), prob(rnum(g["upper"]))}, " ")
			if got := find(strings.Fields(want)[:2]); got != want {
				t.Errorf("%s: summary row %q, R %q", ds, got, want)
			}
			n++
		}
		if n < 6 {
			t.Fatalf("%s: %d golden rows", ds, n)
		}
	}
}

// TestTableNumberFormats pins the rounding a person sees.
func TestTableNumberFormats(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct{ got, want string }{
		{sig(0.0100, 3), "0.0100"}, {sig(1022.4, 3), "1022"}, {noisy(13297, 3), "13300"}, {noisy(0.9214, 3), "0.921"}, {noisy(-118.4, 3), "-118"}, {sig(1.3702, 4), "1.370"}, {sig(-0.0485426, 4), "-0.04854"},
		{sig(2457816997797660500000, 3), "2.46e+21"}, {sig(nan, 3), "NA"}, {sig(0, 3), "0"},
		{plain(285), "285"}, {plain(0.95), "0.95"}, {plain(7.333333333333333), "7.33333"}, {plain(nan), "NA"},
		{pval(0.0022, nan), "0.0022"}, {pval(nan, 0.005), "< 0.0050"}, {pval(1e-20, nan), "< 2e-16"}, {pval(3.8e-6, nan), "3.8e-06"},
		{pval(nan, nan), "NA"}, {pwords(0.17, nan), "= 0.17"}, {pwords(nan, 0.005), "< 0.0050"},
		{prob(0.9359999999999999), "0.936"}, {count(120.4), "120"}, {timeText(315.33, 7.33), "315"}, {timeText(3.14159, 0.5), "3.1"},
		{csvNum(0.9359999999999999), "0.936"}, {csvNum(nan), "NA"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// A private Weibull release whose scale upper limit is finite but beyond a
// million time_max (about 2% of the lung fits at epsilon 1 with 40
// interval simulations: 3.27e+16 days was printed) shows "> cap" and says
// why, instead of digits no one can use; a usable limit prints as before.
func TestWeibullTableCapsAbsurdScaleLimit(t *testing.T) {
	t.Parallel()
	release := func(upper float64) map[string]any {
		return map[string]any{"epsilon": 1.0, "method": "lsp", "time_unit": "days", "time_max": 1100.0, "n": 151.0,
			"shape": 4.56, "shape_lower": 0.01, "shape_upper": 10.0, "scale": 0.592, "scale_lower": 0.0, "scale_upper": upper}
	}
	for _, tc := range []struct {
		upper      float64
		want, lack []string
	}{
		{2.97e13, []string{"> 1000000", "> 1.10e+09", "beyond a million time_max"}, []string{"e+16"}},
		{3.5, []string{"3.50", "3850"}, []string{"> ", "beyond a million"}},
	} {
		var b strings.Builder
		weibullTable(&b, release(tc.upper))
		o := b.String()
		for _, w := range tc.want {
			if !strings.Contains(o, w) {
				t.Errorf("upper %v: table lacks %q:\n%s", tc.upper, w, o)
			}
		}
		for _, l := range tc.lack {
			if strings.Contains(o, l) {
				t.Errorf("upper %v: table has %q:\n%s", tc.upper, l, o)
			}
		}
		if g := garbage.FindString(o); g != "" {
			t.Errorf("upper %v: garbage number %q in the table:\n%s", tc.upper, g, o)
		}
	}
}
