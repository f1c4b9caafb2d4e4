package aggregators

import "github.com/dpsurv/dpsurv/regression"

// discreteIntervals fills the coefficient intervals of a discrete release
// from the released coefficients and the public noise only
// (regression.OutputIntervals; post-processing).
func discreteIntervals(df *DiscreteFields, res regression.DiscreteResult) error {
	lo, hi, method, err := regression.OutputIntervals(res, 0.95)
	if err != nil {
		return err
	}
	df.IntervalMethod = method
	if lo == nil {
		return nil
	}
	e := len(res.Alpha)
	df.AlphaLower, df.AlphaUpper = lo[:e], hi[:e]
	df.BetaLower, df.BetaUpper = lo[e:], hi[e:]
	return nil
}
