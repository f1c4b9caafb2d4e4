package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

// Golden values of R (survival 3.5) on lung with every time beyond 100 days
// censored at 100: scripts/golden_horizon.R.
const (
	rLungCensoredAt100       = 184
	rLungSurv100Cohort1      = 0.8560000000
	rLungSurv100Cohort2      = 0.9174962293
	rLungWeibullShape100     = 1.1357468636
	rLungWeibullScaleDays100 = 616.2543224068
)

type kmOut struct {
	CensoredAtHorizon *int    `json:"censored_at_horizon"`
	HorizonRule       string  `json:"horizon_rule"`
	TimeMax           float64 `json:"time_max"`
	Cohorts           []struct {
		Cohort      string     `json:"cohort"`
		Time        []float64  `json:"time"`
		Surv        []float64  `json:"surv"`
		Median      *float64   `json:"median"`
		NoiseStdErr []*float64 `json:"noise_std_err"`
	} `json:"cohorts"`
}

func decodeOut[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %v: %s", err, s)
	}
	return v
}

// Follow-up past the public horizon is censored there (issue 19): on lung
// with --time-max 100 the non-private KM is R's KM of the data censored at
// 100, no median is at or below 100 (R: 285 and 444 without the horizon;
// clamping made both 100), and the private release's S(100) lies within
// its noise of it (4 noise SDs of log S: the clamp put it near 0.19).
func TestFitKMCensorsAtHorizon(t *testing.T) {
	t.Parallel()
	lung := datasets.Path(t, "lung_tte.csv")
	ref := decodeOut[kmOut](t, runOK(t, "fit", "km", "--input", lung, "--epsilon", "inf", "--cohorts", "1,2", "--time-max", "100"))
	if ref.CensoredAtHorizon == nil || *ref.CensoredAtHorizon != rLungCensoredAt100 || ref.HorizonRule != HorizonRule || ref.TimeMax != 100 {
		t.Fatalf("non-private: censored_at_horizon %v, rule %q, time_max %v; want %d (exact on the non-private path)",
			ref.CensoredAtHorizon, ref.HorizonRule, ref.TimeMax, rLungCensoredAt100)
	}
	want := map[string]float64{"1": rLungSurv100Cohort1, "2": rLungSurv100Cohort2}
	s100 := map[string]float64{}
	for _, c := range ref.Cohorts {
		last := len(c.Surv) - 1
		if c.Time[last] > 100 || math.Abs(c.Surv[last]-want[c.Cohort]) > 1e-9 {
			t.Fatalf("non-private cohort %s: S(%v) = %v, want R's %v at 100", c.Cohort, c.Time[last], c.Surv[last], want[c.Cohort])
		}
		if c.Median != nil {
			t.Fatalf("non-private cohort %s: median %v, want none (S(100) > 0.5)", c.Cohort, *c.Median)
		}
		s100[c.Cohort] = c.Surv[last]
	}
	for _, method := range []string{"hierarchical", "histogram"} {
		priv := decodeOut[kmOut](t, runOK(t, "fit", "km", "--input", lung, "--epsilon", "1", "--cohorts", "1,2", "--time-max", "100", "--method", method))
		if priv.CensoredAtHorizon != nil || priv.HorizonRule != HorizonRule {
			t.Fatalf("%s: censored_at_horizon %v (a private release withholds it), rule %q", method, priv.CensoredAtHorizon, priv.HorizonRule)
		}
		for _, c := range priv.Cohorts {
			if c.Median != nil && *c.Median <= 100 {
				t.Fatalf("%s cohort %s: median %v at or below the horizon", method, c.Cohort, *c.Median)
			}
			last := len(c.Surv) - 1
			if last < 0 || c.NoiseStdErr[last] == nil {
				t.Fatalf("%s cohort %s: empty curve or no noise SE", method, c.Cohort)
			}
			if d := math.Abs(math.Log(c.Surv[last]) - math.Log(s100[c.Cohort])); d > 4**c.NoiseStdErr[last] {
				t.Errorf("%s cohort %s: private S(%v) = %v, non-private S(100) = %v: |log ratio| %v > 4 noise SDs (%v)",
					method, c.Cohort, c.Time[last], c.Surv[last], s100[c.Cohort], d, 4**c.NoiseStdErr[last])
			}
		}
	}
}

// The Weibull fits censor at the horizon too: the non-private fit with
// --time-max 100 is R's survreg on the data censored at 100 (shape 1.14;
// the clamp gave 9.7), and a private fit at a large epsilon lands near it.
func TestFitWeibullCensorsAtHorizon(t *testing.T) {
	lung := datasets.Path(t, "lung_tte.csv")
	o, e, code := run(t, "fit", "weibull", "--input", lung, "--epsilon", "inf", "--time-max", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	type wOut struct {
		Shape             float64 `json:"shape"`
		ScaleTimeUnits    float64 `json:"scale_time_units"`
		CensoredAtHorizon *int    `json:"censored_at_horizon"`
		ClampedTimes      int     `json:"clamped_times"`
	}
	ref := decodeOut[wOut](t, o)
	if math.Abs(ref.Shape-rLungWeibullShape100) > 1e-5 || math.Abs(ref.ScaleTimeUnits-rLungWeibullScaleDays100)/rLungWeibullScaleDays100 > 1e-5 {
		t.Fatalf("non-private shape %v, scale %v days; want R's %v, %v", ref.Shape, ref.ScaleTimeUnits, rLungWeibullShape100, rLungWeibullScaleDays100)
	}
	if ref.CensoredAtHorizon == nil || *ref.CensoredAtHorizon != rLungCensoredAt100 || ref.ClampedTimes != 0 {
		t.Fatalf("censored_at_horizon %v, clamped_times %d; want %d and 0", ref.CensoredAtHorizon, ref.ClampedTimes, rLungCensoredAt100)
	}
	priv := decodeOut[wOut](t, runOK(t, "fit", "weibull", "--input", lung, "--epsilon", "200", "--cohorts", "1,2", "--time-max", "100", "--interval-sims", "-1"))
	if priv.Shape < 0.7 || priv.Shape > 1.8 || priv.CensoredAtHorizon != nil {
		t.Fatalf("private shape %v (want near %v), censored_at_horizon %v (withheld)", priv.Shape, rLungWeibullShape100, priv.CensoredAtHorizon)
	}
}

// The discrete and Cox fits censor at the horizon: fitting with --time-max
// equals fitting the data already censored there.
func TestFitRegressionCensorsAtHorizon(t *testing.T) {
	lung := datasets.Path(t, "lung_tte.csv")
	type rOut struct {
		Beta              []float64 `json:"beta"`
		CensoredAtHorizon *int      `json:"censored_at_horizon"`
		HorizonRule       string    `json:"horizon_rule"`
	}
	censored := writeCensoredLung(t, 100)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"discrete", []string{"fit", "discrete", "--epsilon", "inf", "--covariates", "age,ph.ecog", "--centre", "62,1", "--scale", "40,4", "--intervals", "20"}},
		{"cox", []string{"fit", "cox", "--epsilon", "inf", "--covariates", "age,ph.ecog"}},
	} {
		got := decodeOut[rOut](t, runOK(t, append(tc.args, "--input", lung, "--time-max", "100")...))
		want := decodeOut[rOut](t, runOK(t, append(tc.args, "--input", censored, "--time-max", "100")...))
		if got.CensoredAtHorizon == nil || *got.CensoredAtHorizon != rLungCensoredAt100 || got.HorizonRule != HorizonRule {
			t.Fatalf("%s: censored_at_horizon %v, rule %q", tc.name, got.CensoredAtHorizon, got.HorizonRule)
		}
		for j := range want.Beta {
			if math.Abs(got.Beta[j]-want.Beta[j]) > 1e-9 {
				t.Fatalf("%s: beta %v with --time-max, %v on the data censored at 100", tc.name, got.Beta, want.Beta)
			}
		}
	}
}

// writeCensoredLung writes lung with every time beyond h censored at h.
func writeCensoredLung(t *testing.T, h float64) string {
	t.Helper()
	b, err := os.ReadFile(datasets.Path(t, "lung_tte.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := 1; i < len(lines); i++ {
		f := strings.Split(lines[i], ",")
		tm, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if tm > h {
			f[1], f[2] = strconv.FormatFloat(h, 'g', -1, 64), "0"
		}
		lines[i] = strings.Join(f, ",")
	}
	p := filepath.Join(t.TempDir(), "lung_censored.csv")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
