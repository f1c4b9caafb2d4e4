package dp

import (
	"fmt"
	"math"
)

// This file holds exact samplers for the central mechanisms of dpfit and
// regression: Bernoulli(exp(-x)) for a dyadic rational x (the building block
// of exact exponential-mechanism sampling, Canonne–Kamath–Steinke 2020) and
// integer noise on a public grid for vectors.

// RationalDown writes x >= 0 as num/den with den = 2^30, rounding down (so
// that exp(-num/den) >= exp(-x): an exponential-mechanism weight computed
// with it never spends more than the budget x was derived from).
func RationalDown(x float64) (num, den uint64, err error) {
	if !(x >= 0) || math.IsInf(x, 0) || x > 1<<32 {
		return 0, 0, fmt.Errorf("rational: %v must be in [0, 2^32]", x)
	}
	den = 1 << maxDenBits
	return uint64(math.Floor(x * float64(den))), den, nil // x*2^30 is exact in float64
}

// BernoulliExp returns true with probability exp(-num/den) exactly
// (num >= 0, den > 0): floor(num/den) independent Bernoulli(exp(-1)) draws
// and one Bernoulli(exp(-frac)), stopping at the first failure.
func BernoulliExp(src Source, num, den uint64) bool {
	if den == 0 {
		return false
	}
	for num > den {
		if !bernoulliExpFrac(src, 1, 1) {
			return false
		}
		num -= den
	}
	return bernoulliExpFrac(src, num, den)
}

// GridLaplaceVector releases v + noise on the grid of step g: each
// coordinate is rounded to the nearest multiple of g and then gets
// independent g * DiscreteLaplace(scale/g). With scale = (s1 + d g)/epsilon,
// s1 the L1 sensitivity of v and d = len(v), the released vector is
// epsilon-DP: rounding moves each coordinate by at most g/2, so the rounded
// vectors of neighbours differ by at most s1 + d g in L1, and the discrete
// Laplace mechanism on the integer lattice is exactly epsilon-DP for that
// sensitivity. Every value returned is an exact multiple of g.
func GridLaplaceVector(src Source, v []float64, g, scale float64) ([]float64, error) {
	if !(g > 0) || math.IsInf(g, 0) {
		return nil, fmt.Errorf("grid laplace: grid step must be positive and finite, got %v", g)
	}
	out := make([]float64, len(v))
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("grid laplace: coordinate %d is not finite", j)
		}
		z, err := DiscreteLaplace(src, scale/g)
		if err != nil {
			return nil, fmt.Errorf("grid laplace: %w", err)
		}
		out[j] = (math.Round(x/g) + float64(z)) * g
	}
	return out, nil
}
