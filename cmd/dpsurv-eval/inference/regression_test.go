package inference

import (
	"fmt"
	"testing"

	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/regression"
)

// regressionBounds bound each epsilon's and the pooled beta coverage of
// RegressionPlan (production defaults: 200 intervals). Ext-Out-Pert: 240
// beta intervals per epsilon (binomial SE 0.014 at 0.95), each in [0.89,
// 0.995] (4 SEs below; the upper end catches limits grown uselessly
// conservative) and the pooled 720 in [0.93, 0.99]. Ext-Obj-Pert: 200 per
// epsilon (SE 0.015), each at least 0.89, pooled at least 0.92 (its cells
// measured 0.95-0.995: conservative). pSGLD publishes no limits (they
// under-covered: 0.77-0.92 at the defaults, the generator's 30 releases per
// epsilon): checked withheld on regressionPSGLDTestReps releases per
// epsilon, their coverage (recomputed from each release) logged. Two
// beta intervals share a release, so the SEs are slightly optimistic.
// Alpha's limits are withheld from every release (checked); the coverage
// of the bootstrap's alpha limits, recomputed from each release, is logged
// for docs/inference.md, not gated.
var regressionBounds = map[regression.Method][4]float64{ // each lo, each hi, pooled lo, pooled hi
	regression.MethodOutput:    {0.89, 0.995, 0.93, 0.99},
	regression.MethodObjective: {0.89, 1, 0.92, 1},
}

// TestRegressionCoverage (short): Ext-Out-Pert at the production defaults
// (200 intervals, lambda 0.1, interval fraction 0.5) at epsilon 0.5, the
// weakest cell of the full study, on 20000 records, 30 releases: the true
// beta is covered by at least 52 of the 60 intervals (0.867; binomial:
// false alarm 0.3% at a true 0.95, and an interval covering 0.80 passes
// with probability 0.13), every release has beta limits and none has alpha
// limits (withheld at these defaults). Measured: 55 of 60 (0.917). (Until
// 2026-11-26: 40 releases, at least 68 of 80 (0.85): false alarm 0.02%, a
// 0.80 interval passing with probability 0.16, for a third more CPU; the
// 30 are the first 30 of those 40.) (At 200 intervals the noise dominates
// the ridge's bias, so the noise-only limits are no longer a useful
// contrast here: they cover the true beta about as often.)
func TestRegressionCoverage(t *testing.T) {
	t.Parallel() // independent seeded studies: make stats uses both cores
	c, err := RunRegression(RegressionConfig{Method: regression.MethodOutput, Epsilon: 0.5, Records: 20000, Reps: 30, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	logRegression(t, "output", 0.5, c)
	if c.BetaCovered < 52 || c.Fallbacks > 0 || c.NoInterval > 0 {
		t.Errorf("beta coverage %d of %d, want at least 52 (fallbacks %d, without interval %d)", c.BetaCovered, 2*c.Releases, c.Fallbacks, c.NoInterval)
	}
	if c.AlphaWithheld != c.Releases {
		t.Errorf("alpha limits published in %d of %d releases", c.Releases-c.AlphaWithheld, c.Releases)
	}
}

// regressionPSGLDTestReps are the pSGLD releases per epsilon of
// TestRegressionCoverageFull: the first of RegressionPlan's (same seeds,
// same worlds). Their only gate is deterministic — a pSGLD release
// withholds its beta and alpha limits (regression IntervalPSGLDWithheld,
// set by the method alone, whatever the draw: regression's
// TestPSGLDIntervalsWithheld checks it on a small world) — and their
// coverage, logged, was never gated: the 30 per epsilon of the docs table
// (about 2 s of CPU each, 260 of the package's 750 CPU-s in make stats)
// are the generator's (dpsurv-eval inference), not the test's. One per
// epsilon checks the withholding at the plan's size (it was 2 until
// 2026-11-26: 12.6 CPU-s for the 6).
const regressionPSGLDTestReps = 1

// TestRegressionCoverageFull runs RegressionPlan (the table of
// docs/inference.md) for output and objective perturbation and holds it to
// regressionBounds; pSGLD's first regressionPSGLDTestReps releases per
// epsilon are checked to withhold their limits. The non-private Wald
// column of the table is the generator's only (logged NaN here: it is
// not gated, and its MLE fit costs as much as the release).
func TestRegressionCoverageFull(t *testing.T) {
	t.Parallel() // independent seeded studies: make stats uses both cores
	testtier.Heavy(t, "regression coefficient interval coverage at the default 200 intervals (about 3 minutes on 2 cores)")
	// Each (method, epsilon) cell is its own parallel subtest, so that the
	// cells share the cores with the other studies of make stats.
	for _, s := range RegressionPlan {
		t.Run(string(s.Method), func(t *testing.T) {
			t.Parallel()
			lim := regressionBounds[s.Method]
			epsilons := []float64{0.5, 1, 2}
			cells := make([]RegressionCoverage, len(epsilons))
			reps := s.Reps
			if s.Method == regression.MethodPSGLD {
				reps = min(reps, regressionPSGLDTestReps)
			}
			t.Run("cells", func(t *testing.T) {
				for i, eps := range epsilons {
					t.Run(fmt.Sprint("epsilon=", eps), func(t *testing.T) {
						t.Parallel()
						c, err := RunRegression(RegressionConfig{Method: s.Method, Epsilon: eps, Records: s.Records, Reps: reps,
							Withheld: s.Method == regression.MethodPSGLD, Seed: s.Seed + uint64(i)})
						if err != nil {
							t.Fatal(err)
						}
						logRegression(t, string(s.Method), eps, c)
						cells[i] = c
					})
				}
			})
			if t.Failed() {
				return
			}
			var pooled, alpha float64
			for i, c := range cells {
				eps := epsilons[i]
				if c.AlphaWithheld != c.Releases {
					t.Errorf("%s epsilon %v: alpha limits published in %d releases", s.Method, eps, c.Releases-c.AlphaWithheld)
				}
				if s.Method == regression.MethodPSGLD {
					if c.BetaWithheld != c.Releases-c.Fallbacks {
						t.Errorf("psgld epsilon %v: beta limits published in %d releases", eps, c.Releases-c.Fallbacks-c.BetaWithheld)
					}
					continue
				}
				if b := c.BetaCoverage(); b < lim[0] || b > lim[1] {
					t.Errorf("%s epsilon %v: beta coverage %.3f outside [%v, %v]", s.Method, eps, b, lim[0], lim[1])
				}
				pooled += c.BetaCoverage() / 3
				alpha += c.AlphaCoverage() / 3
			}
			if s.Method == regression.MethodPSGLD {
				return
			}
			if pooled < lim[2] || pooled > lim[3] {
				t.Errorf("%s: pooled beta coverage %.3f outside [%v, %v]", s.Method, pooled, lim[2], lim[3])
			}
			t.Logf("%s: pooled beta coverage %.3f; withheld alpha limits' coverage %.3f", s.Method, pooled, alpha)
		})
	}
}

func logRegression(t *testing.T, method string, eps float64, c RegressionCoverage) {
	t.Helper()
	t.Logf("%s epsilon %v: beta coverage %.3f (mean width %.3f, bias %.3f) of %d; withheld alpha %.3f %v; noise-only %.3f; Wald %.3f (%.3f); fallbacks %d, without limits %d",
		method, eps, c.BetaCoverage(), c.BetaWidth, c.BetaBias, 2*c.Releases, c.AlphaCoverage(), c.AlphaCovered,
		c.NoiseOnlyCoverage(), c.WaldCoverage(), c.WaldWidth, c.Fallbacks, c.NoInterval)
}
