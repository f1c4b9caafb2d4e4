package inference

import (
	"testing"

	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/regression"
)

// regressionBounds bound each epsilon's and the pooled beta coverage of
// RegressionPlan. Ext-Out-Pert: 300 beta intervals per epsilon (binomial
// SE 0.0126 at 0.95), each in [0.90, 0.995] and the pooled 900 in [0.93,
// 0.99] (the upper ends allow the measured conservatism where the Hessian
// is noisy: docs/inference.md), alpha pooled at least 0.90. Ext-Obj-Pert:
// 200 per epsilon, each at least 0.90. pSGLD: 60 per epsilon (SE 0.028),
// each at least 0.85, pooled at least 0.90 (approximate: its note).
var regressionBounds = map[regression.Method][4]float64{ // each lo, each hi, pooled lo, pooled hi
	regression.MethodOutput:    {0.90, 0.995, 0.93, 0.99},
	regression.MethodObjective: {0.90, 1, 0.90, 1},
	regression.MethodPSGLD:     {0.85, 1, 0.90, 1},
}

// TestRegressionCoverage (short): Ext-Out-Pert at epsilon 1 on 20000
// records, 30 releases: the true beta's coverage is at least 0.85 (60
// intervals; 4 binomial SEs below 0.95) while the noise-only limits miss
// it in most releases (the ridge's bias).
func TestRegressionCoverage(t *testing.T) {
	c, err := RunRegression(RegressionConfig{Method: regression.MethodOutput, Epsilon: 1, Records: 20000, Reps: 30, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	logRegression(t, "output", 1, c)
	if c.BetaCoverage() < 0.85 || c.Fallbacks > 0 || c.NoInterval > 0 {
		t.Errorf("beta coverage %.3f (fallbacks %d, without interval %d)", c.BetaCoverage(), c.Fallbacks, c.NoInterval)
	}
	if !(c.NoiseOnlyCoverage() < 0.5) {
		t.Errorf("noise-only coverage %.3f: the ridge's bias should show", c.NoiseOnlyCoverage())
	}
}

// TestRegressionCoverageFull runs RegressionPlan (the table of
// docs/inference.md) and holds it to regressionBounds.
func TestRegressionCoverageFull(t *testing.T) {
	t.Parallel() // independent seeded studies: make stats uses both cores
	testtier.Heavy(t, "regression coefficient interval coverage (about 8 minutes)")
	for _, s := range RegressionPlan {
		lim := regressionBounds[s.Method]
		var pooled, alpha float64
		for i, eps := range []float64{0.5, 1, 2} {
			c, err := RunRegression(RegressionConfig{Method: s.Method, Epsilon: eps, Records: s.Records, Reps: s.Reps,
				Wald: s.Method == regression.MethodOutput, Seed: s.Seed + uint64(i)})
			if err != nil {
				t.Fatal(err)
			}
			logRegression(t, string(s.Method), eps, c)
			if b := c.BetaCoverage(); b < lim[0] || b > lim[1] {
				t.Errorf("%s epsilon %v: beta coverage %.3f outside [%v, %v]", s.Method, eps, b, lim[0], lim[1])
			}
			pooled += c.BetaCoverage() / 3
			alpha += c.AlphaCoverage() / 3
		}
		if pooled < lim[2] || pooled > lim[3] {
			t.Errorf("%s: pooled beta coverage %.3f outside [%v, %v]", s.Method, pooled, lim[2], lim[3])
		}
		if s.Method == regression.MethodOutput && alpha < 0.90 {
			t.Errorf("%s: pooled alpha coverage %.3f < 0.90", s.Method, alpha)
		}
	}
}

func logRegression(t *testing.T, method string, eps float64, c RegressionCoverage) {
	t.Helper()
	t.Logf("%s epsilon %v: beta coverage %.3f (mean width %.3f, bias %.3f) of %d; withheld alpha %.3f %v; noise-only %.3f; Wald %.3f (%.3f); fallbacks %d, without limits %d",
		method, eps, c.BetaCoverage(), c.BetaWidth, c.BetaBias, 2*c.Releases, c.AlphaCoverage(), c.AlphaCovered,
		c.NoiseOnlyCoverage(), c.WaldCoverage(), c.WaldWidth, c.Fallbacks, c.NoInterval)
}
