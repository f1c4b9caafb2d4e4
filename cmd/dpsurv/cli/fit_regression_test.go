package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
	"github.com/dpsurv/dpsurv/regression"
)

type regGolden struct {
	Covariates []string  `json:"covariates"`
	Centre     []float64 `json:"centre"`
	Scale      []float64 `json:"scale"`
	TimeMax    float64   `json:"time_max"`
	Discrete   []struct {
		Link  string    `json:"link"`
		Alpha []float64 `json:"alpha"`
		Beta  []float64 `json:"beta"`
	} `json:"discrete"`
	Cox []struct {
		Ties string    `json:"ties"`
		Beta []float64 `json:"beta"`
		SE   []float64 `json:"se"`
	} `json:"cox"`
}

func joinF(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func relClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol*math.Max(math.Abs(want[i]), 1e-3) {
			t.Fatalf("%s[%d] = %.10g, R %.10g", what, i, got[i], want[i])
		}
	}
}

// TestFitRegressionInfMatchesR runs `dpsurv fit discrete|cox --epsilon inf`
// on lung_tte.csv and compares with R's glm(binomial) on the person-period
// expansion and coxph (regression/testdata, scripts/golden_regression.R).
func TestFitRegressionInfMatchesR(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../regression/testdata/lung.json")
	if err != nil {
		t.Fatal(err)
	}
	var g regGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	base := []string{"--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "inf",
		"--covariates", strings.Join(g.Covariates, ","), "--centre", joinF(g.Centre), "--scale", joinF(g.Scale)}
	for _, d := range g.Discrete {
		o := runOK(t, append([]string{"fit", "discrete", "--link", d.Link, "--time-max", fmt.Sprint(g.TimeMax)}, base...)...)
		var res struct {
			Alpha, Beta []float64
		}
		json.Unmarshal([]byte(o), &res)
		relClose(t, d.Link+" alpha", res.Alpha, d.Alpha, 1e-6)
		relClose(t, d.Link+" beta", res.Beta, d.Beta, 1e-6)
	}
	// coxph ran on the raw covariates.
	raw := base[:len(base)-4]
	for _, c := range g.Cox {
		o := runOK(t, append([]string{"fit", "cox", "--ties", c.Ties}, raw...)...)
		var res struct {
			Beta, SE  []float64
			Guarantee string
		}
		json.Unmarshal([]byte(o), &res)
		relClose(t, c.Ties+" beta", res.Beta, c.Beta, 1e-6)
		relClose(t, c.Ties+" se", res.SE, c.SE, 1e-5)
	}
	// HPPCox is labelled heuristic; a private Cox is refused.
	o, e, code := run(t, append([]string{"fit", "cox", "--projection", "random", "--dims", "2"}, base...)...)
	if code != 0 || !strings.Contains(o, `"none (heuristic)"`) {
		t.Fatalf("hppcox: exit %d %s %s", code, o, e)
	}
	if _, _, code := run(t, "fit", "cox", "--input", "x", "--cohorts", "1", "--epsilon", "1", "--covariates", "age"); code != 2 {
		t.Fatalf("private cox: exit %d", code)
	}
	o, e, code = run(t, "fit", "discrete", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "2",
		"--method", "objective", "--covariates", "age,ph.ecog", "--centre", "60,1", "--scale", "20,2", "--time-max", "1100")
	if code != 0 || !strings.Contains(o, `"approximate (objective perturbation`) {
		t.Fatalf("objective: exit %d %s %s", code, o, e)
	}
	o, e, code = run(t, "fit", "discrete", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "2",
		"--method", "psgld", "--link", "cloglog", "--psgld-steps", "500", "--psgld-minibatch", "50", "--covariates", "age,ph.ecog",
		"--centre", "60,1", "--scale", "20,2", "--time-max", "1100")
	if code != 0 || !strings.Contains(o, `"approximate (mcmc)"`) || !strings.Contains(o, `"steps":500`) {
		t.Fatalf("psgld: exit %d %s %s", code, o, e)
	}
}

// TestFitPrivateReleasesStatePublic: every private `dpsurv fit` release
// lists what it treats as public; a discrete release, whose noise scale,
// delta, epsilon' and psgld.v are exact functions of n, says n is public
// and publishes it exactly instead of spending budget on a noisy copy (the
// old release published n_noisy = true and a noisy n while its noise_scale
// gave n away).
func TestFitPrivateReleasesStatePublic(t *testing.T) {
	t.Parallel()
	mle := runJSON(t, "fit", "discrete", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "inf",
		"--covariates", "age,ph.ecog", "--centre", "60,1", "--scale", "20,2", "--time-max", "1100")
	for _, m := range []string{"newton", "output", "objective", "psgld"} {
		res := runJSON(t, "fit", "discrete", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "2",
			"--method", m, "--psgld-steps", "200", "--covariates", "age,ph.ecog", "--centre", "60,1", "--scale", "20,2", "--time-max", "1100")
		pub, _ := res["public"].([]any)
		if res["n"] != mle["n"] || res["n_noisy"] != false || len(pub) == 0 || pub[0] != "n" || res["epsilon_count"] != nil {
			t.Errorf("%s: n %v (exact %v), n_noisy %v, public %v, epsilon_count %v", m, res["n"], mle["n"], res["n_noisy"], res["public"], res["epsilon_count"])
		}
	}
	for _, args := range [][]string{
		{"km", "--time-max", "1100", "--bin-width", "10"},
		{"weibull", "--time-max", "1100"},
	} {
		a := append([]string{"fit"}, args[0], "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "1")
		res := runJSON(t, append(a, args[1:]...)...)
		if pub, _ := res["public"].([]any); len(pub) == 0 {
			t.Errorf("%s: no public list: %v", args[0], res)
		}
	}
}

// TestFitDiscreteIntervalFraction: a private `fit discrete --method
// output` spends the default share of epsilon on the interval release and
// prints the true coefficients' limits; --interval-epsilon-fraction 0
// gives the whole budget to the coefficients and only the labelled
// noise-only limits.
func TestFitDiscreteIntervalFraction(t *testing.T) {
	base := []string{"fit", "discrete", "--method", "output", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "2",
		"--covariates", "age,ph.ecog", "--centre", "60,1", "--scale", "20,2", "--time-max", "1100"}
	for _, c := range []struct {
		extra    []string
		fit      float64
		hessians bool
	}{{nil, 2 * (1 - regression.DefaultIntervalFraction), true}, {[]string{"--interval-epsilon-fraction", "0"}, 2, false}} {
		res := runJSON(t, append(append([]string(nil), base...), c.extra...)...)
		_, hasH := res["hessians"]
		_, hasLo := res["beta_lower"]
		_, hasNoiseOnly := res["noise_only_beta_lower"]
		if res["epsilon_fit"] != c.fit || hasH != c.hessians || hasLo != c.hessians || !hasNoiseOnly {
			t.Errorf("%v: epsilon_fit %v, hessians %v, beta_lower %v, noise-only %v", c.extra, res["epsilon_fit"], hasH, hasLo, hasNoiseOnly)
		}
		// the stream's names and presence: coefficient_interval_method,
		// epsilon_interval even when 0
		_, old := res["interval_method"]
		if m, _ := res["coefficient_interval_method"].(string); m == "" || old || res["epsilon_interval"] != 2-c.fit {
			t.Errorf("%v: coefficient_interval_method %q, interval_method present %v, epsilon_interval %v", c.extra, m, old, res["epsilon_interval"])
		}
	}
}

// TestFitDiscreteNewtonDefault: the default private method is newton; its
// release carries beta and baseline limits, standard errors, z and p, and
// hazard ratios with limits, spends the whole epsilon on its own steps
// (epsilon_interval 0), works with cloglog, and refuses an explicit
// --interval-epsilon-fraction (which does not apply to it).
func TestFitDiscreteNewtonDefault(t *testing.T) {
	base := []string{"fit", "discrete", "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "2",
		"--covariates", "age,ph.ecog", "--centre", "60,1", "--scale", "20,2", "--time-max", "1100"}
	for _, extra := range [][]string{nil, {"--link", "cloglog"}} {
		res := runJSON(t, append(append([]string(nil), base...), extra...)...)
		if res["method"] != "newton" || res["epsilon_fit"] != 2.0 || res["epsilon_interval"] != 0.0 || res["coefficient_interval_method"] != regression.IntervalNewton {
			t.Errorf("%v: method %v, epsilon_fit %v, epsilon_interval %v, interval method %v", extra, res["method"], res["epsilon_fit"], res["epsilon_interval"], res["coefficient_interval_method"])
		}
		for _, k := range []string{"alpha_lower", "alpha_upper", "alpha_se", "beta_lower", "beta_upper", "beta_se", "beta_z", "beta_p", "hazard_ratio", "hazard_ratio_lower", "hazard_ratio_upper"} {
			if v, _ := res[k].([]any); len(v) == 0 {
				t.Errorf("%v: %s missing", extra, k)
			}
		}
	}
	_, e, code := run(t, append(append([]string(nil), base...), "--interval-epsilon-fraction", "0.3")...)
	if code != 2 || !strings.Contains(e, "does not apply to --method newton") {
		t.Errorf("explicit fraction with newton: exit %d %s", code, e)
	}
}

// The regression fits refuse an input without --covariates (usage, exit 2),
// naming the command, before reading any row.
func TestRegressionFitsNeedCovariates(t *testing.T) {
	for _, name := range []string{"discrete", "cox"} {
		t.Run(name, func(t *testing.T) {
			_, e, code := run(t, "fit", name, "--input", datasets.Path(t, "lung_tte.csv"), "--cohorts", "1,2", "--epsilon", "inf")
			if want := "dpsurv fit " + name + ": --covariates is required"; code != 2 || !strings.Contains(e, want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, e, want)
			}
		})
	}
}
