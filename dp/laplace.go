package dp

import (
	"fmt"
	"math"
	"math/bits"
)

// This file holds the central-DP noise primitives. Integer noise is sampled
// exactly with the algorithm of Canonne, Kamath and Steinke (2020): the scale
// is turned into an exact rational s/t (a float64 is a dyadic rational), and
// every step uses integer arithmetic and Bernoulli(exp(-x)) samplers, so the
// sampled distribution is exactly the discrete Laplace distribution
// P(Z = z) proportional to exp(-|z| / scale). Continuous Laplace noise is
// built from it on a power-of-two grid (Mironov 2012 style snapping): the
// value is rounded to the grid first and the sensitivity is inflated by one
// grid step, so the guarantee holds for the values actually released.

// maxDenBits bounds the denominator of the rational scale. A scale that is
// not a multiple of 2^-maxDenBits is rounded up to the next multiple, which
// only adds noise (it never weakens the guarantee).
const maxDenBits = 30

// rationalScale writes scale >= 0 as s/t with t a power of two <= 2^maxDenBits,
// rounding up.
func rationalScale(scale float64) (s, t uint64, err error) {
	if !(scale > 0) || math.IsInf(scale, 0) || math.IsNaN(scale) {
		return 0, 0, fmt.Errorf("noise scale must be positive and finite, got %v", scale)
	}
	if scale > MaxNoiseScale {
		return 0, 0, fmt.Errorf("noise scale %v too large", scale)
	}
	t = 1 << maxDenBits
	sf := math.Ceil(scale * float64(t)) // exact: scale*2^30 is exact in float64, ceil rounds up
	s = uint64(sf)
	// strip the common factors of two (t's are its maxDenBits)
	k := min(bits.TrailingZeros64(s), maxDenBits)
	return s >> k, t >> k, nil
}

// bernoulliRat returns true with probability num/den exactly.
func bernoulliRat(src Source, num, den uint64) bool {
	return Uint64n(src, den) < num
}

// lemire is Uint64n's value for a first word x, with ok = false in the
// rare case (probability below n/2^64) where Lemire's method must look at
// more words: then uint64nRetry(src, x, n) is the value. Small enough to be
// inlined in the samplers' hot loops.
func lemire(x, n uint64) (v uint64, ok bool) {
	if n&(n-1) == 0 { // power of two
		return x & (n - 1), true
	}
	hi, lo := mul64(x, n)
	return hi, lo >= n
}

// uint64nRetry is Uint64n(src, n) for a first word x with which lemire
// was not ok.
func uint64nRetry(src Source, x, n uint64) uint64 {
	hi, lo := mul64(x, n)
	thresh := -n % n
	for lo < thresh {
		hi, lo = mul64(src.Uint64(), n)
	}
	return hi
}

// uint64nOf is Uint64n(src, n) for a first word x already drawn.
func uint64nOf(src Source, x, n uint64) uint64 {
	v, ok := lemire(x, n)
	if !ok {
		v = uint64nRetry(src, x, n)
	}
	return v
}

// bernoulliExpFrac returns true with probability exp(-num/den) for
// 0 <= num <= den (Canonne–Kamath–Steinke Algorithm 1, gamma in [0,1]).
func bernoulliExpFrac(src Source, num, den uint64) bool {
	k := uint64(1)
	for {
		// A ~ Bernoulli(gamma / k) = Bernoulli(num / (den*k))
		hi, lo := mul64(den, k)
		if hi != 0 {
			// den*k overflowed: the probability num/(den*k) is below
			// 2^-34 here; fall back to exact two-stage draw.
			if !bernoulliRat(src, num, den) || !bernoulliRat(src, 1, k) {
				break
			}
		} else {
			x := src.Uint64()
			r, ok := lemire(x, lo)
			if !ok {
				r = uint64nRetry(src, x, lo)
			}
			if r >= num { // !bernoulliRat(src, num, lo)
				break
			}
		}
		k++
	}
	return k%2 == 1
}

// bernoulliExpOne is bernoulliExpFrac(src, 1, 1), Bernoulli(exp(-1)), with
// the same draws: the k = 1 trial is Bernoulli(1), which takes a word and
// always succeeds (Uint64n(src, 1)), and trial k >= 2 is Bernoulli(1/k),
// Uint64n(src, k) < 1. Trial 2 is written out: Uint64n(src, 2) is the low
// bit of the word.
func bernoulliExpOne(src Source) bool {
	src.Uint64()
	if src.Uint64()&1 != 0 {
		return false // trial 2 failed: k = 2
	}
	for k := uint64(3); ; k++ {
		x := src.Uint64()
		r, ok := lemire(x, k)
		if !ok {
			r = uint64nRetry(src, x, k)
		}
		if r != 0 { // trial k failed
			return k%2 == 1
		}
	}
}

// discreteLaplaceST samples P(Z=z) ∝ exp(-|z| den/num), i.e. scale num/den,
// exactly (Canonne–Kamath–Steinke Algorithm 2 with their t = num, s = den),
// for den = 2^shift.
func discreteLaplaceST(src Source, num uint64, shift uint) int64 {
	for {
		x := src.Uint64()
		u, ok := lemire(x, num)
		if !ok {
			u = uint64nRetry(src, x, num)
		}
		if !bernoulliExpFrac(src, u, num) {
			continue
		}
		v := uint64(0)
		for bernoulliExpOne(src) {
			v++
		}
		hi, tv := mul64(num, v)
		w := u + tv
		if hi != 0 || w < tv {
			continue // astronomically unlikely overflow: reject and restart
		}
		y := w >> shift // w / den
		b := src.Uint64()&1 == 1
		if b && y == 0 {
			continue
		}
		if b {
			return -int64(y)
		}
		return int64(y)
	}
}

// DiscreteLaplace draws Z with P(Z = z) proportional to exp(-|z|/scale), the
// two-sided geometric distribution with a = exp(-1/scale). The scale is
// rounded up to a multiple of 2^-30 (more noise, never less).
func DiscreteLaplace(src Source, scale float64) (int64, error) {
	l, err := NewLaplaceSampler(scale)
	if err != nil {
		return 0, err
	}
	return l.Draw(src), nil
}

// LaplaceSampler is DiscreteLaplace for one scale with the scale's exact
// rational form worked out once, for the many draws of a release (its
// nodes or cells): its draws are DiscreteLaplace's, word for word.
type LaplaceSampler struct {
	num   uint64
	shift uint // the scale is num / 2^shift
}

// NewLaplaceSampler returns the sampler of DiscreteLaplace(src, scale).
func NewLaplaceSampler(scale float64) (LaplaceSampler, error) {
	s, t, err := rationalScale(scale)
	if err != nil {
		return LaplaceSampler{}, fmt.Errorf("discrete laplace: %w", err)
	}
	// t is a power of two (rationalScale): the division by it is a shift
	return LaplaceSampler{num: s, shift: uint(bits.TrailingZeros64(t))}, nil
}

// Draw returns one draw of DiscreteLaplace(src, scale). The zero
// LaplaceSampler is not usable.
func (l LaplaceSampler) Draw(src Source) int64 {
	return discreteLaplaceST(src, l.num, l.shift)
}

// GeometricMechanism releases an integer count with epsilon-DP given its L1
// sensitivity: value + DiscreteLaplace(sensitivity/epsilon).
func GeometricMechanism(src Source, value int64, sensitivity, epsilon float64) (int64, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return 0, fmt.Errorf("geometric mechanism: epsilon must be positive and finite, got %v", epsilon)
	}
	if !(sensitivity > 0) {
		return 0, fmt.Errorf("geometric mechanism: sensitivity must be positive, got %v", sensitivity)
	}
	z, err := DiscreteLaplace(src, sensitivity/epsilon)
	if err != nil {
		return 0, fmt.Errorf("geometric mechanism: %w", err)
	}
	return value + z, nil
}

// LaplaceGrid returns the power-of-two grid step used to release a real value
// whose Laplace scale is scale: about scale * 2^-20, so the grid is far below
// the noise.
func LaplaceGrid(scale float64) float64 {
	_, e := math.Frexp(scale)
	return math.Ldexp(1, e-21)
}

// LaplaceMechanism releases a real value with epsilon-DP given its L1
// sensitivity, by discrete Laplace noise on a power-of-two grid g: the value
// is rounded to the grid (moving it by at most g/2, so neighbouring values
// differ by at most sensitivity+g on the grid) and g*DiscreteLaplace((sensitivity+g)/(g*epsilon))
// is added. The result is a multiple of g; its noise has the Laplace shape
// with scale slightly above sensitivity/epsilon.
func LaplaceMechanism(src Source, value, sensitivity, epsilon float64) (float64, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return 0, fmt.Errorf("laplace mechanism: epsilon must be positive and finite, got %v", epsilon)
	}
	if !(sensitivity > 0) || math.IsInf(sensitivity, 0) {
		return 0, fmt.Errorf("laplace mechanism: sensitivity must be positive and finite, got %v", sensitivity)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return 0, fmt.Errorf("laplace mechanism: value must be finite")
	}
	g := LaplaceGrid(sensitivity / epsilon)
	k := math.Round(value / g)
	z, err := DiscreteLaplace(src, (sensitivity+g)/(g*epsilon))
	if err != nil {
		return 0, fmt.Errorf("laplace mechanism: %w", err)
	}
	return (k + float64(z)) * g, nil
}

// Laplace returns one draw of (grid-snapped) Laplace noise with the given
// scale, for baselines and tests that need the noise itself.
func Laplace(src Source, scale float64) (float64, error) {
	g := LaplaceGrid(scale)
	z, err := DiscreteLaplace(src, scale/g)
	if err != nil {
		return 0, fmt.Errorf("laplace: %w", err)
	}
	return float64(z) * g, nil
}
