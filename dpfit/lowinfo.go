package dpfit

import "math"

// The low-information rule shared by the KM (dpfit/km) and Weibull
// (dpfit/weibull) releases: a cohort whose noisy record count is below
// LowInformationThreshold of that count's noise SD is flagged.
const (
	// MinInformativeN is the smallest noisy record count of a cohort that
	// is not flagged LowInformation, whatever the noise.
	MinInformativeN = 20
	// LowInformationSDs: a cohort is also flagged when its noisy count is
	// below this many standard deviations of that count's noise.
	LowInformationSDs = 4
)

// LowInformationThreshold is the noisy-count threshold below which a cohort
// is flagged, for a count whose noise has standard deviation sd (public).
func LowInformationThreshold(sd float64) float64 {
	return math.Max(MinInformativeN, LowInformationSDs*sd)
}
