package aggregators

import (
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
)

// The range of an aggregate's epsilon that its noise samplers can draw
// (issue 21: 1e-300 and 1e308 used to validate, then every window was
// withheld and charged).
//
// Every kind draws noise of scale k/epsilon-share with dp.DiscreteLaplace
// (at most dp.MaxNoiseScale = 2^32) or weighs with
// dp.RationalDown(epsilon/4 ...) (at most dp.MaxRational = 2^32). The
// factor k (sensitivity over the share of epsilon a draw gets: the tree
// levels of a cumulative km, 21 at the largest horizon; the four parts of
// a weibull fit; the discrete kind's parts) stays below 2^8, so
// MinEpsilon = 2^-24 keeps every scale at most 2^32, and MaxEpsilon = 2^32
// keeps epsilon/4 and the weights' exponents within RationalDown's 2^32
// with a factor 4 to spare. TestEpsilonLimitsReleasable releases a window
// of every kind at both ends.
const (
	MinEpsilon = 0x1p-24 // about 6.0e-8
	MaxEpsilon = 0x1p32  // about 4.3e9
)

// checkEpsilonRange refuses an epsilon outside [MinEpsilon, MaxEpsilon].
func checkEpsilonRange(eps float64) error {
	switch {
	case eps < MinEpsilon:
		return fmt.Errorf("%v is below %v: its noise scale would exceed the samplers' largest (%d, dp.MaxNoiseScale), so every window would be withheld and charged", eps, MinEpsilon, dp.MaxNoiseScale)
	case eps > MaxEpsilon:
		return fmt.Errorf("%v is above %v: the samplers cannot draw it exactly (dp.MaxRational %d), so every window would be withheld and charged", eps, MaxEpsilon, dp.MaxRational)
	}
	return nil
}
