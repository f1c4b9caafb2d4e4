package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/internal/datasets"
	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/plots/plotstest"
	"github.com/dpsurv/dpsurv/regression"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/survival"
)

// TestPrivateKMFigureNoPhantom draws private KM releases of lung and
// flchain (several seeds) as `fit km --plot` does and checks the drawing
// model: every drawn point of a cohort's curve is on the released step
// function, the noise-dominated part starts where the solid part ends and
// never rises above the last released S before the noise-dominated time
// (issue 19: the tail was drawn from (0, 1) — a flat line at S = 1 across
// flchain, a false drop from 1.0 to 0.69 on lung), and each cohort keeps
// its label position's colour.
func TestPrivateKMFigureNoPhantom(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file    string
		labels  string
		timeMax float64
		seeds   int
	}{
		{"lung_tte.csv", "1,2", 1100, 4},
		{"lung_tte.csv", "1,2", 400, 2},
		{"flchain_tte.csv", "1,2,3,4,5,6,7,8,9,10", 5500, 2},
	}
	tails := 0
	for _, tc := range cases {
		labels := strings.Split(tc.labels, ",")
		d, err := readFitFile(datasets.Path(t, tc.file), schemas.Spec{Cohorts: labels, TimeUnit: "days"})
		if err != nil {
			t.Fatal(err)
		}
		h, err := km.NewHistogram(km.DefaultBinWidth(tc.timeMax), tc.timeMax, len(labels))
		if err != nil {
			t.Fatal(err)
		}
		for i := range d.Time {
			if err := h.Add(d.Time[i], d.Event[i], int(d.Cohort[i])); err != nil {
				t.Fatal(err)
			}
		}
		for seed := uint64(1); seed <= uint64(tc.seeds); seed++ {
			res, err := km.HierarchicalKM(h, dp.NewSeededSource(seed), km.KMOptions{Epsilon: 1, LogRankSims: -1})
			if err != nil {
				t.Fatal(err)
			}
			spec := privateKMSpec(tc.file, "days", labels, res, tc.timeMax)
			fig, err := plots.BuildKM(spec)
			if err != nil {
				t.Fatal(err)
			}
			if bad := plotstest.CheckKM(spec, fig); len(bad) > 0 {
				t.Errorf("%s time_max %g seed %d:\n%s", tc.file, tc.timeMax, seed, strings.Join(bad, "\n"))
			}
			for _, c := range spec.Cohorts {
				if !math.IsNaN(c.NoiseFrom) {
					tails++
				}
			}
			if fig.Risk.Rows[0].Colour != plots.CohortColour(0) || !strings.Contains(fig.Risk.Heading, "noisy") {
				t.Errorf("risk table %q, colour %v", fig.Risk.Heading, fig.Risk.Rows[0].Colour)
			}
		}
	}
	if tails == 0 {
		t.Fatal("no release had a noise-dominated tail: the test checks nothing")
	}
}

// TestFitPlotFiles runs `fit km --plot` and `fit weibull --plot` as a user
// does, private and not, PNG and SVG: the PNG decodes and is at least 1600
// px wide (672 px before issue 19), the SVG parses. The Weibull figures are
// KM with the fitted curve and its band (non-private) and without
// intervals (private, for speed). A .jpg plot is refused.
func TestFitPlotFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lung := datasets.Path(t, "lung_tte.csv")
	for _, tc := range []struct {
		fit, file string
		args      []string
	}{
		{"km", "np.png", []string{"--epsilon", "inf"}},
		{"km", "p.png", []string{"--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100"}},
		{"km", "p.svg", []string{"--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100", "--time-unit", "months"}},
		{"weibull", "np.png", []string{"--epsilon", "inf", "--cohort", "1", "--cohorts", "1,2"}},
		{"weibull", "p.svg", []string{"--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100", "--interval-sims", "-1"}},
	} {
		p := filepath.Join(dir, tc.fit+"-"+tc.file)
		args := append([]string{"fit", tc.fit, "--input", lung, "--plot", p}, tc.args...)
		if _, e, code := run(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, e)
		}
		plotstest.CheckFigureFile(t, p)
	}
	// A .jpg plot is refused before the fit: a private fit charges no
	// budget for a figure it cannot draw.
	budget := filepath.Join(dir, "budget.json")
	for _, fit := range []string{"km", "weibull"} {
		_, e, code := run(t, "fit", fit, "--input", lung, "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100",
			"--budget-file", budget, "--budget-total", "10", "--plot", filepath.Join(dir, "x.jpg"))
		if code == 0 || !strings.Contains(e, "want a .png or .svg file") {
			t.Fatalf("fit %s: a .jpg plot was accepted: exit %d, %s", fit, code, e)
		}
	}
	if _, err := os.Stat(budget); !os.IsNotExist(err) {
		t.Errorf("a refused .jpg plot touched the budget file: %v", err)
	}
}

// TestWeibullWaldBandMatchesR: the non-private Weibull figure's band
// equals the delta-method band from R's survreg vcov
// (testdata/plot_weibull_band.R) to 1e-6.
func TestWeibullWaldBandMatchesR(t *testing.T) {
	f, err := os.Open("testdata/plot_weibull_band.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := readFitFile(datasets.Path(t, "lung_tte.csv"), schemas.Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days"})
	if err != nil {
		t.Fatal(err)
	}
	var tt []float64
	var ee []bool
	for i := range d.Time {
		if d.Cohort[i] == 0 {
			tt, ee = append(tt, d.Time[i]), append(ee, d.Event[i])
		}
	}
	cm, err := survival.CompressChecked(tt, ee)
	if err != nil {
		t.Fatal(err)
	}
	cfg := weibull.WeibullConfig{Epsilon: math.Inf(1), TimeMax: 1022, Omega: 6, Gamma: 10, Rungs: 500}.WithDefaults()
	fit, err := weibull.FitWeibull(nil, cm, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	band := weibullWaldBand(tt, ee, fit.Shape, fit.Scale, 1022, 6, 0.95)
	if band == nil {
		t.Fatal("no band")
	}
	sc := bufio.NewScanner(f)
	rows := 0
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		v := make([]float64, 0, 4)
		for _, s := range fs {
			if x, err := strconv.ParseFloat(s, 64); err == nil {
				v = append(v, x)
			}
		}
		if fs[0] == "shape" {
			if math.Abs(fit.Shape-v[0]) > 1e-5 || math.Abs(fit.Scale-v[1]) > 1e-5 {
				t.Fatalf("fit %g %g, R %g %g", fit.Shape, fit.Scale, v[0], v[1])
			}
			continue
		}
		lo, hi := band(v[0])
		if math.Abs(lo-v[2]) > 1e-5 || math.Abs(hi-v[3]) > 1e-5 {
			t.Errorf("t = %g: band [%.8g, %.8g], R [%.8g, %.8g]", v[0], lo, hi, v[2], v[3])
		}
		rows++
	}
	if rows < 4 {
		t.Fatalf("%d golden rows", rows)
	}
}

// TestWeibullBoxBand: the private band contains the released curve and is
// the extremes over the interval rectangle (checked on a grid of it).
func TestWeibullBoxBand(t *testing.T) {
	band := weibullBoxBand(0.8, 1.4, 0.3, 0.5, 1000)
	for _, tm := range []float64{1, 50, 300, 400, 499, 700, 1000} {
		lo, hi := band(tm)
		for i := 0; i <= 20; i++ {
			for j := 0; j <= 20; j++ {
				k := 0.8 + 0.6*float64(i)/20
				l := 0.3 + 0.2*float64(j)/20
				s := math.Exp(-math.Pow(tm/(l*1000), k))
				if s < lo-1e-12 || s > hi+1e-12 {
					t.Fatalf("t = %g: S(k=%g, λ=%g) = %g outside [%g, %g]", tm, k, l, s, lo, hi)
				}
			}
		}
	}
}

// TestPlotCommand: `dpsurv plot` draws the JSON `fit km` printed, private
// and not, with the same drawing model checks as --plot.
func TestPlotCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lung := datasets.Path(t, "lung_tte.csv")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"np", []string{"--epsilon", "inf"}},
		{"p", []string{"--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100"}},
	} {
		o := runOK(t, append([]string{"fit", "km", "--input", lung}, tc.args...)...)
		js := filepath.Join(dir, tc.name+".json")
		if err := os.WriteFile(js, []byte(o), 0o644); err != nil {
			t.Fatal(err)
		}
		png := filepath.Join(dir, tc.name+".png")
		if _, e, code := run(t, "plot", "--input", js, "--output", png, "--cohorts", "1,2"); code != 0 {
			t.Fatalf("plot: %s", e)
		}
		plotstest.CheckFigureFile(t, png)
		var doc map[string]any
		if err := json.Unmarshal([]byte(o), &doc); err != nil {
			t.Fatal(err)
		}
		spec, err := plotSpecFromJSON([]map[string]any{doc}, []string{"1", "2"}, "", "x")
		if err != nil {
			t.Fatal(err)
		}
		fig, err := plots.BuildKM(spec)
		if err != nil {
			t.Fatal(err)
		}
		if bad := plotstest.CheckKM(spec, fig); len(bad) > 0 {
			t.Errorf("%s:\n%s", tc.name, strings.Join(bad, "\n"))
		}
		if got := strings.Contains(fig.Risk.Heading, "noisy"); got != (tc.name == "p") {
			t.Errorf("%s: risk heading %q", tc.name, fig.Risk.Heading)
		}
	}
	if _, _, code := run(t, "plot", "--input", filepath.Join(dir, "np.json")); code == 0 {
		t.Fatal("plot without --output accepted")
	}
}

// TestDemoFiguresShareColours: the demo's sanitized-topic figure and its
// release figure give each label the same colour, whatever order the
// releases arrive in.
func TestDemoFiguresShareColours(t *testing.T) {
	labels := []string{"A", "B", "C"}
	var np []plots.KMCohort
	for k, l := range labels {
		np = append(np, npKMCohort(l, k, survival.KMCurve{Time: []float64{1, 2}, Surv: []float64{0.9, 0.8}, Conf: 0.95}))
	}
	var rel []map[string]any
	for _, l := range []string{"C", "A", "B"} { // arrival order
		rel = append(rel, map[string]any{"cohort": l, "time": []any{0.0, 1.0}, "surv": []any{0.9, 0.8}, "time_max": 2.0,
			"epsilon": 1.0, "noise_dominated_from": nil})
	}
	a, err := plots.BuildKM(demoSanitizedSpec(np))
	if err != nil {
		t.Fatal(err)
	}
	b, err := plots.BuildKM(demoReleaseSpec(rel, labels))
	if err != nil {
		t.Fatal(err)
	}
	colour := func(f plots.Figure) map[string]string {
		m := map[string]string{}
		for _, l := range f.Lines {
			if l.Role == plots.RoleEstimate {
				m[l.Cohort] = fmt.Sprint(l.Colour)
			}
		}
		return m
	}
	ca, cb := colour(a), colour(b)
	for i, l := range labels {
		if ca[l] == "" || ca[l] != cb[l] || ca[l] != fmt.Sprint(plots.CohortColour(i)) {
			t.Errorf("label %s: sanitized %s, release %s", l, ca[l], cb[l])
		}
	}
}

// TestDocsFiguresRegenerated: every figure docs/figures.md shows is
// written by scripts/figures.sh (its regeneration command, which doccmd
// runs) and is in docs/img as a PNG at least 1600 px wide or an SVG.
func TestDocsFiguresRegenerated(t *testing.T) {
	t.Parallel()
	root := filepath.Dir(datasets.Dir(t))
	doc, err := os.ReadFile(filepath.Join(root, "docs", "figures.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "figures.sh"))
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, line := range strings.Split(string(doc), "\n") {
		i := strings.Index(line, "](img/")
		if i < 0 {
			continue
		}
		name := strings.TrimSuffix(line[i+len("](img/"):], ")")
		shown++
		if !strings.Contains(string(script), "/"+name+"\"") && !strings.Contains(string(script), "/"+name) {
			t.Errorf("docs/figures.md shows img/%s, which scripts/figures.sh does not write", name)
		}
		plotstest.CheckFigureFile(t, filepath.Join(root, "docs", "img", name))
	}
	if shown < 8 {
		t.Fatalf("docs/figures.md shows %d figures", shown)
	}
}

// TestWeibullFigureLowInformation: a private Weibull release whose JSON
// carries low_information: true (issue 19 item 5) is marked in the
// figure's subtitle; without the field, or false, it is not. The band is
// the interval rectangle's envelope when the intervals are present.
func TestWeibullFigureLowInformation(t *testing.T) {
	fit := weibull.WeibullFit{Shape: 1.3, Scale: 0.4, Method: "lsp", Epsilon: 1, Guarantee: "pure-dp", Neighbouring: "add/remove-one"}
	for _, tc := range []struct {
		out  map[string]any
		flag bool
	}{
		{map[string]any{}, false},
		{map[string]any{"low_information": false}, false},
		{map[string]any{"low_information": true, "shape_lower": schemas.NullableFloat(1), "shape_upper": schemas.NullableFloat(1.6),
			"scale_lower": schemas.NullableFloat(0.3), "scale_upper": schemas.NullableFloat(0.5)}, true},
	} {
		s := weibullPrivateSpec("x.csv", "days", "", -1, fit, 1000, tc.out)
		fig, err := plots.BuildKM(s)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(strings.Join(fig.Subtitle, "\n"), "low_information")
		if got != tc.flag {
			t.Errorf("out %v: flagged %v", tc.out, got)
		}
		hasBand := len(s.Parametric[0].Lower) > 0
		if _, ok := tc.out["shape_lower"]; ok != hasBand {
			t.Errorf("out %v: band %v", tc.out, hasBand)
		}
		if len(s.Cohorts) != 0 {
			t.Error("a private Weibull figure draws a Kaplan–Meier curve")
		}
	}
}

// TestFitDiscretePlot: `fit discrete --plot` draws the model's survival
// at the covariates' centre (over the KM for the non-private fit); the
// curve is the product of (1 - hazard) over the intervals of the released
// alpha, checked here against a direct computation at the last interval.
func TestFitDiscretePlot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lung := datasets.Path(t, "lung_tte.csv")
	base := []string{"fit", "discrete", "--input", lung, "--cohorts", "1,2", "--covariates", "age,ph.ecog", "--centre", "62,1", "--scale", "40,4"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"np.png", []string{"--epsilon", "inf"}},
		{"p.png", []string{"--epsilon", "2", "--time-max", "1100"}},
	} {
		p := filepath.Join(dir, tc.name)
		o := runOK(t, append(append(append([]string(nil), base...), "--plot", p), tc.args...)...)
		plotstest.CheckFigureFile(t, p)
		var res regression.DiscreteResult
		if err := json.Unmarshal([]byte(o), &res); err != nil {
			t.Fatal(err)
		}
		pc, err := discreteBaseline(res)
		if err != nil {
			t.Fatal(err)
		}
		basis, _ := regression.SplineBasis(res.Intervals, res.Knots)
		want := 1.0
		for s := range basis {
			z := 0.0
			for j, a := range res.Alpha {
				z += a * basis[s][j]
			}
			want *= 1 - 1/(1+math.Exp(-z))
		}
		if got := pc.Surv[len(pc.Surv)-1]; math.Abs(got-want) > 1e-12 || pc.Time[len(pc.Time)-1] != res.TimeMax {
			t.Errorf("%s: S(%g) = %g, want %g at %g", tc.name, pc.Time[len(pc.Time)-1], got, want, res.TimeMax)
		}
	}
}

// TestPlotSpecFromFitTopic: with fit-topic messages, `dpsurv plot` draws
// the latest window of one km aggregate, each label in its list
// position's colour, with noisy counts labelled as such.
func TestPlotSpecFromFitTopic(t *testing.T) {
	msg := func(label string, window float64, agg string) map[string]any {
		return map[string]any{"kind": "km", "aggregate": agg, "cohort": label, "window_start_unix": window, "epsilon": 1.0,
			"guarantee": "pure-dp", "method": "hierarchical-histogram-km", "time_unit": "months", "time_max": 100.0,
			"time": []any{0.0, 10.0, 20.0}, "surv": []any{0.95, 0.9, 0.8}, "n_risk": []any{50.0, 40.0, 30.0},
			"noise_dominated_from": 20.0, "truncated_at": nil}
	}
	// the fit topic's privacy statement (no release) is skipped
	statement := map[string]any{"schema": schemas.PatientStatementSchemaName, "key": schemas.PatientStatementKey, "kind": schemas.PatientStatementKind}
	docs := []map[string]any{statement, msg("B", 1, "km"), msg("A", 1, "km"), msg("B", 2, "km"), msg("A", 2, "km"), msg("C", 2, "other"),
		{"kind": "weibull", "aggregate": "w"}}
	spec, err := plotSpecFromJSON(docs, []string{"A", "B", "C"}, "", "topic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Cohorts) != 2 || spec.TimeUnit != "months" || !spec.NoisyCounts {
		t.Fatalf("cohorts %d, unit %q, noisy %v", len(spec.Cohorts), spec.TimeUnit, spec.NoisyCounts)
	}
	for _, c := range spec.Cohorts {
		if want := map[string]int{"A": 0, "B": 1}[c.Label]; c.Position != want {
			t.Errorf("label %s at position %d, want %d", c.Label, c.Position, want)
		}
	}
	fig, err := plots.BuildKM(spec)
	if err != nil {
		t.Fatal(err)
	}
	if bad := plotstest.CheckKM(spec, fig); len(bad) > 0 {
		t.Error(strings.Join(bad, "\n"))
	}
	if _, err := plotSpecFromJSON([]map[string]any{{"kind": "weibull"}}, nil, "", "x"); err == nil {
		t.Error("a file without a km curve was accepted")
	}
}
