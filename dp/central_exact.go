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
	if !(x >= 0) || math.IsInf(x, 0) || x > MaxRational {
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
		if !bernoulliExpOne(src) {
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
	lap, err := NewLaplaceSampler(scale / g)
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("grid laplace: coordinate %d is not finite", j)
		}
		if err != nil { // after the coordinate check, as per draw before
			return nil, fmt.Errorf("grid laplace: %w", err)
		}
		out[j] = (math.Round(x/g) + float64(lap.Draw(src))) * g
	}
	return out, nil
}

// DiscreteGaussian draws Y with P(Y = y) proportional to
// exp(-y^2 / (2 sigma2)) for an integer variance parameter sigma2 in
// [1, 2^24] (Canonne–Kamath–Steinke 2020, Algorithm 3): Y is a discrete
// Laplace draw of integer scale t = floor(sqrt(sigma2)) + 1, accepted with
// probability exp(-(|Y| t - sigma2)^2 / (2 sigma2 t^2)) by BernoulliExp.
// Integer arithmetic throughout: the exponent's numerator and denominator
// stay below 2^64 while |Y| t < 2^31, so draws beyond are redrawn — the
// result is exactly the discrete Gaussian truncated at |Y| < 2^31/t, at
// least 2^7 standard deviations out (truncated mass below exp(-8000)).
func DiscreteGaussian(src Source, sigma2 uint64) (int64, error) {
	if sigma2 < 1 || sigma2 > 1<<24 {
		return 0, fmt.Errorf("discrete gaussian: sigma^2 must be in [1, 2^24], got %d", sigma2)
	}
	t := uint64(math.Sqrt(float64(sigma2)))
	for t*t > sigma2 {
		t--
	}
	for (t+1)*(t+1) <= sigma2 {
		t++
	}
	t++ // floor(sqrt(sigma2)) + 1
	for {
		y := discreteLaplaceST(src, t, 0)
		a := uint64(y)
		if y < 0 {
			a = uint64(-y)
		}
		if a*t >= 1<<31 {
			continue
		}
		d := int64(a*t) - int64(sigma2)
		if d < 0 {
			d = -d
		}
		num := uint64(d) * uint64(d)
		den := 2 * sigma2 * t * t
		if BernoulliExp(src, num, den) {
			return y, nil
		}
	}
}

// GaussianOnGrid returns g*Y with Y ~ DiscreteGaussian(ceil((sigma/g)^2)) on
// the power-of-two grid g near sigma * 2^-10: Gaussian-shaped noise of
// standard deviation sigma (to about 2^-20 relative, rounded up), sampled
// exactly on a lattice. sigma must be positive and finite.
func GaussianOnGrid(src Source, sigma float64) (float64, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("gaussian on grid: sigma must be positive and finite, got %v", sigma)
	}
	g, u := onGrid(sigma)
	y, err := DiscreteGaussian(src, uint64(math.Ceil(u*u)))
	if err != nil {
		return 0, fmt.Errorf("gaussian on grid: %w", err)
	}
	return float64(y) * g, nil
}

// onGrid returns GaussianOnGrid's grid g = 2^(e-11) for sigma in
// [2^(e-1), 2^e), and u = sigma/g in [2^10, 2^11) (exact: g is a power of
// two). For a normal sigma whose grid is normal too (sigma >= 2^-1012) g
// and 1/g are written from sigma's exponent bits, which is what
// Frexp and Ldexp compute, without their calls and a division.
func onGrid(sigma float64) (g, u float64) {
	if e := math.Float64bits(sigma) >> 52; e >= 11 && e <= 2046 { // sigma > 0: no sign bit
		// sigma in [2^(e-1023), 2^(e-1022)): g = 2^(e-1033), 1/g = 2^(1033-e)
		g = math.Float64frombits((e - 10) << 52)
		return g, sigma * math.Float64frombits((2056-e)<<52)
	}
	_, e := math.Frexp(sigma) // sigma in [2^(e-1), 2^e)
	g = math.Ldexp(1, e-11)   // sigma/g in [2^10, 2^11)
	return g, sigma / g
}
