package aggregators_test

import (
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
)

// The fingerprint of a checkpointed aggregate hashes its params' JSON: a
// change of the params' Go layout (one typed struct per kind) must not
// change it, or every saved checkpoint would be refused. The
// values were computed by the version before the kinds owned their params
// (2be5024), with every param of each kind set.
func TestFingerprintStable(t *testing.T) {
	base := func(name, kind string, p aggregators.Params) aggregators.Config {
		return aggregators.Config{Name: name, Kind: kind, Window: aggregators.Window{Size: time.Minute, Lateness: time.Minute},
			Epsilon: 1, Cohorts: []string{"A", "B"}, TimeMax: 90, TimeUnit: "days", Covariates: []string{"age", "ecog"}, Params: p}
	}
	km, err := aggregators.ParseParams("km", map[string]any{"bin_width": 2, "method": "noisy-histogram", "conf": 0.9,
		"max_noise_std_err": 0.3, "logrank_sims": 99, "interval_sims": 50})
	if err != nil {
		t.Fatal(err)
	}
	wb, err := aggregators.ParseParams("weibull", map[string]any{"bin_width": 3, "method": "laplace", "omega": 5, "gamma": 9,
		"rungs": 300, "interval_sims": 400})
	if err != nil {
		t.Fatal(err)
	}
	dt, err := aggregators.ParseParams("discrete", map[string]any{"method": "output", "covariates": []string{"age", "ecog"},
		"centre": []float64{60, 1}, "scale": []float64{20, 2}, "intervals": 30, "knots": 4, "lambda": 0.5, "link": "logit",
		"time_max": 80, "max_records": 5000, "interval_epsilon_fraction": 0.25})
	if err != nil {
		t.Fatal(err)
	}
	cum := base("cum", aggregators.KindKM, nil)
	cum.Window.Cumulative, cum.Window.Horizon = true, 8
	for _, tc := range []struct {
		cfg  aggregators.Config
		want string
	}{
		{base("km", aggregators.KindKM, km), "a1f0eaf8fe06b68d"},
		{base("km0", aggregators.KindKM, nil), "0411d840285b8230"},
		{base("km0typed", aggregators.KindKM, aggregators.KMParams{}), "0411d840285b8230"},
		{base("wb", aggregators.KindWeibull, wb), "a1b325c109fe0544"},
		{base("wb0", aggregators.KindWeibull, nil), "246ed8155c65617a"},
		{base("dt", aggregators.KindDiscrete, dt), "f0ab7a1c1c1835ee"},
		{cum, "8ecb760909ed3832"},
	} {
		if err := tc.cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.cfg.Name, err)
		}
		if got := tc.cfg.Fingerprint(); got != tc.want {
			t.Errorf("%s: fingerprint %s, want %s", tc.cfg.Name, got, tc.want)
		}
	}
}
