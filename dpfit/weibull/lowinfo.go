package weibull

import (
	"github.com/dpsurv/dpsurv/dpfit"

	"fmt"
	"math"
)

// Low-information flags of private Weibull releases (issue 19): a release
// whose shape interval spans (a bound of) its public range, or whose noise
// dominates its sampling error, or whose noisy event count is below the
// public threshold, is flagged: it is published, but it says little about
// the data. Every test below is post-processing of released values and
// public parameters.

// WeibullNoiseDominanceRatio is the width ratio above which the noise of a
// private Weibull release dominates: the shape interval (log scale) is more
// than this many times as wide as the interval sampling error alone would
// give with the released event count (noise variance above three times the
// sampling variance).
const WeibullNoiseDominanceRatio = 2.0

// weibullLogShapeSE is the large-sample standard error of ln(shape) with d
// events of an uncensored Weibull sample, sqrt(6/pi^2)/sqrt(d) (the
// Fisher information of the Gumbel scale of ln T); censoring only widens
// it, so the sampling-only width below is a lower bound and the flag errs
// on the side of "noise dominates" only when it does.
func weibullLogShapeSE(d float64) float64 { return math.Sqrt(6/(math.Pi*math.Pi)) / math.Sqrt(d) }

// WeibullLowInformation returns whether a private Weibull release carries
// little information, and why: its shape interval (iv; nil when intervals
// were not computed) reaches 0 or the public bound gamma, or is more than
// WeibullNoiseDominanceRatio times as wide on the log scale as sampling
// error alone with the released event count; or its noisy event count (LSP)
// is below LowInformationThreshold of the count noise's SD. The
// non-private fit (epsilon +Inf) is never flagged.
func WeibullLowInformation(fit WeibullFit, iv *WeibullInterval) (bool, string) {
	if math.IsInf(fit.Epsilon, 1) || !(fit.Epsilon > 0) {
		return false, ""
	}
	gamma := fit.Params["gamma"]
	if fit.Method == WeibullMethodLSP {
		// TLL's count noise: discrete Laplace of scale 4/epsilon (epsilon/4,
		// sensitivity 1), SD sqrt(2) 4/epsilon.
		thr := dpfit.LowInformationThreshold(math.Sqrt2 * 4 / fit.Epsilon)
		if !(fit.N >= thr) {
			return true, fmt.Sprintf("noisy event count below the public threshold %.3g (max(%d, %d SD of the count's noise)): shape and scale are dominated by noise",
				thr, dpfit.MinInformativeN, dpfit.LowInformationSDs)
		}
	}
	if iv == nil || math.IsNaN(iv.ShapeLower) || math.IsNaN(iv.ShapeUpper) {
		return false, ""
	}
	lo, hi := iv.ShapeLower, iv.ShapeUpper
	if gamma > 0 && (lo <= 0 || hi >= gamma) {
		return true, fmt.Sprintf("shape interval [%.3g, %.3g] reaches the edge of the public range [0, %g]: the data do not pin the shape down", lo, hi, gamma)
	}
	if fit.Method == WeibullMethodLSP && fit.N > 0 {
		sampling := 2 * 1.959963984540054 * weibullLogShapeSE(fit.N)
		if w := math.Log(hi / lo); w > WeibullNoiseDominanceRatio*sampling {
			return true, fmt.Sprintf("noise dominates: the shape interval is %.1f times as wide (log scale) as sampling error alone with %.0f events",
				w/sampling, fit.N)
		}
	}
	return false, ""
}
