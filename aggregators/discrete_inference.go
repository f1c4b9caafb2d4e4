package aggregators

import "github.com/dpsurv/dpsurv/regression"

// discreteIntervals copies the coefficient intervals of a discrete fit
// into its release: the honest ones (regression.CoefficientIntervals,
// computed by FitDiscrete from the released coefficients and Hessians) and
// the labelled noise-only limits. For a window without a fit (the
// fallback of discreteKind.noFit) they are computed here, from the release
// alone (post-processing).
func discreteIntervals(df *DiscreteFields, res regression.DiscreteResult) {
	if res.IntervalMethod == "" {
		e := len(res.Alpha)
		if lo, hi, err := regression.NoiseOnlyIntervals(res, 0.95); err == nil && lo != nil {
			res.NoiseOnlyAlphaLower, res.NoiseOnlyAlphaUpper = lo[:e], hi[:e]
			res.NoiseOnlyBetaLower, res.NoiseOnlyBetaUpper = lo[e:], hi[e:]
		}
		res.IntervalMethod = regression.IntervalNone
		if res.EpsilonInterval > 0 {
			res.IntervalMethod += regression.IntervalUnspentNote
		}
	}
	df.WaldSummary, df.CoefficientLimits = res.WaldSummary, res.CoefficientLimits
}
