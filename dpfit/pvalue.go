package dpfit

import "math"

// PValueBound splits a Monte-Carlo p-value for release: at the floor
// 1/(1 + sims) (no simulated statistic reached the observed one) the
// p-value is not estimated, only bounded, so p is NaN (null) and upper is
// the floor ("p <= upper"); otherwise p is returned with upper NaN. A
// floor of 0 (no Monte-Carlo calibration) never bounds.
func PValueBound(p, floor float64) (est, upper float64) {
	if floor > 0 && !math.IsNaN(p) && p <= floor*(1+1e-9) {
		return math.NaN(), floor
	}
	return p, math.NaN()
}
