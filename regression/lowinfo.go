package regression

import (
	"fmt"
	"math"
)

// Low-information flag of a private discrete-time release (issue 19).
//
// The covariates of the model are scaled by the public centre and scale
// and lie in the unit ball, so a coefficient of 1 is already a strong
// effect: the odds of the event change by a factor e across one scale
// unit. A release whose 95% interval for some beta contains both -1 and
// +1 cannot tell a strong protective effect from a strong harmful one: the
// noise dominates whatever the data say. The interval is the noise-aware
// one where released (beta_lower/beta_upper), else the noise-only limits
// (which cover less, so a flag from them is conservative); a fallback's
// coefficients are noise around zero. Post-processing of released values.

// LowInformationEffect is the coefficient size (per scaled covariate unit)
// both of whose signs an uninformative interval contains.
const LowInformationEffect = 1.0

// NewtonStudiedRecords is the public record count below which a newton
// release is flagged low_information whatever its limits say: its coverage
// was measured at n = 50,000 only, and on lung (210 records, epsilon 1)
// it released an age effect of the wrong sign with a limit excluding 0.
const NewtonStudiedRecords = 10000

// AssessInformation returns whether a private discrete release carries
// little information about the coefficients, and why. The non-private fit
// is never flagged; a private release without any coefficient limits
// (pSGLD and objective-cloglog withhold theirs) is flagged, its reason
// starting "not assessed".
func AssessInformation(res DiscreteResult) (bool, string) {
	if res.Method == MethodMLE || math.IsInf(float64(res.Epsilon), 1) {
		return false, ""
	}
	if res.Fallback {
		return true, "fallback: the coefficients are noise around zero, not a fit"
	}
	if res.Method == MethodNewton && res.N < NewtonStudiedRecords {
		return true, fmt.Sprintf("small sample: %d records; the newton limits' coverage is measured at n = 50,000 (docs/inference.md), "+
			"and below %d records the clipped, floored steps can leave an error the limits do not hold: do not read effects from this release", res.N, NewtonStudiedRecords)
	}
	lo, hi, what := res.BetaLower, res.BetaUpper, "95% interval"
	if lo == nil {
		lo, hi, what = res.NoiseOnlyBetaLower, res.NoiseOnlyBetaUpper, "95% noise-only limits"
	}
	if lo == nil || len(hi) != len(lo) {
		// limits withheld (pSGLD; objective with cloglog: they
		// under-covered) or not computable: nothing published shows that
		// the release says anything about the coefficients, so it is
		// flagged, the reason saying it was not assessed (a false flag
		// here used to mean "not assessed")
		return true, "not assessed: no coefficient limits released (" + withheldWhy(res.IntervalMethod) + "): " +
			"nothing in the release shows how much it says about the coefficients; do not read effects from it"
	}
	for j := range lo {
		if lo[j] <= -LowInformationEffect && hi[j] >= LowInformationEffect {
			name := fmt.Sprintf("beta[%d]", j)
			if j < len(res.Covariates) {
				name = res.Covariates[j]
			}
			return true, fmt.Sprintf("noise dominates: the %s of %s, [%.3g, %.3g], contains both -%g and +%g per scaled unit (a strong effect of either sign)",
				what, name, lo[j], hi[j], LowInformationEffect, LowInformationEffect)
		}
	}
	return false, ""
}

// withheldWhy is the release's interval method, or a placeholder when it
// states none.
func withheldWhy(method string) string {
	if method == "" {
		return "no coefficient_interval_method"
	}
	return "coefficient_interval_method: " + method
}
