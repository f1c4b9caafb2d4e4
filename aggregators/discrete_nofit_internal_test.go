package aggregators

import (
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/regression"
)

// TestDiscreteNoFitEveryLink: a window with fewer than two records is
// released (data-independent noise) with every method and link the config
// accepts, cloglog with output and objective included, and probit (which
// has no perturbation bound: its fallback noise is calibrated as logit's).
func TestDiscreteNoFitEveryLink(t *testing.T) {
	for _, c := range []struct{ method, link string }{
		{"output", "logit"}, {"output", "cloglog"}, {"objective", "cloglog"},
		{"psgld", "cloglog"}, {"psgld", "probit"}, {"newton", "probit"},
	} {
		p := DiscreteParams{Method: c.method, Covariates: []string{"age"}, Intervals: 10, Knots: 3, Lambda: regression.DefaultLambda,
			Link: c.link, IntervalEpsilonFraction: 0.5}
		if c.method == "psgld" || c.method == "newton" {
			p.IntervalEpsilonFraction = 0
		}
		cfg := Config{Epsilon: 1, Params: p}
		res, err := discreteKind{}.noFit(cfg, 1, dp.NewSeededSource(1))
		if err != nil || !res.Fallback || len(res.Alpha) != 3 || len(res.Beta) != 1 {
			t.Errorf("%s %s: %+v, %v", c.method, c.link, res, err)
		}
	}
}
