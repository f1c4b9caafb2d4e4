package regression

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// LatticeNoise is the noise of Ext-Out-Pert and Ext-Obj-Pert: independent
// discrete Laplace noise on every coordinate, on the public grid of step
// Grid: each noise value is Grid*Z with P(Z = z) proportional to
// exp(-|z| Grid / Scale), sampled exactly (dp.DiscreteLaplace: integer
// arithmetic and Bernoulli(exp(-x)) draws; no float inverse CDF, no log(u)).
// Its variance per coordinate is Grid^2 * 2a/(1-a)^2 with a =
// exp(-Grid/Scale), about 2 Scale^2.
//
// Why per-coordinate and not the papers' K-norm density
// exp(-epsilon ||b||_2 / t) (a Gamma(dim) norm times a uniform direction):
// that density needs continuous sampling (log(u), Gaussians), which a
// float64 implementation only approximates, in the way Mironov (2012)
// showed breaks the guarantee. The L1 norm bounds the L2 one by
// ||v||_1 <= sqrt(dim) ||v||_2, so discrete Laplace calibrated to the L1
// sensitivity sqrt(dim) t keeps the budget, with an expected noise norm
// sqrt(2) dim t/epsilon against the K-norm's dim t/epsilon.
type LatticeNoise struct {
	// Grid is the public step; every value drawn is a multiple of it.
	Grid float64 `json:"grid"`
	// Scale is the Laplace scale of each coordinate (data units).
	Scale float64 `json:"scale"`
	// L1 is the L1 sensitivity the scale is calibrated to (Scale = L1 /
	// epsilon), including the rounding term where the data are rounded.
	L1 float64 `json:"l1_sensitivity"`
}

// sqrtUp returns a float64 >= sqrt(x).
func sqrtUp(x float64) float64 { return math.Nextafter(math.Sqrt(x), math.Inf(1)) }

// roundoffMargin inflates a sensitivity computed in float64 (sums of
// square roots, a division) so that it bounds the exact value.
const roundoffMargin = 1 + 1e-12

// OutputNoise is the noise of output perturbation for a vector of dim
// coordinates with L2 sensitivity l2 at budget epsilon. The released value
// is round_g(f) + noise (Release): rounding to the grid g moves each
// coordinate by at most g/2, so the L1 sensitivity of the rounded vector is
// sqrt(dim) l2 + dim g, and Scale = that / epsilon. g is the power of two
// near 2^-20 of sqrt(dim) l2 / epsilon (dp.LaplaceGrid).
func OutputNoise(l2 float64, dim int, epsilon float64) (LatticeNoise, error) {
	l1, err := l1Bound("sensitivity", l2, dim, epsilon)
	if err != nil {
		return LatticeNoise{}, fmt.Errorf("output noise: %w", err)
	}
	g := dp.LaplaceGrid(l1 / epsilon)
	l1 += float64(dim) * g
	return LatticeNoise{Grid: g, Scale: l1 / epsilon, L1: l1}, nil
}

// l1Bound is the L1 bound sqrt(dim) l2, rounded up, of a vector of dim
// coordinates whose L2 norm is at most l2 (named what in the error), after
// checking dim, l2 and epsilon.
func l1Bound(what string, l2 float64, dim int, epsilon float64) (float64, error) {
	if dim < 1 {
		return 0, fmt.Errorf("dimension must be >= 1, got %d", dim)
	}
	if !(l2 > 0) || math.IsInf(l2, 0) || !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return 0, fmt.Errorf("%s %v and epsilon %v must be positive and finite", what, l2, epsilon)
	}
	return sqrtUp(float64(dim)) * l2 * roundoffMargin, nil
}

// ObjectiveNoise is the noise b of objective perturbation: L1 scale
// sqrt(dim) t / epsilon for a gradient bound t (L2), on the grid near 2^-20
// of the scale. No rounding term: b is drawn, not rounded from data.
func ObjectiveNoise(t float64, dim int, epsilon float64) (LatticeNoise, error) {
	l1, err := l1Bound("bound", t, dim, epsilon)
	if err != nil {
		return LatticeNoise{}, fmt.Errorf("objective noise: %w", err)
	}
	return LatticeNoise{Grid: dp.LaplaceGrid(l1 / epsilon), Scale: l1 / epsilon, L1: l1}, nil
}

// Draw returns dim independent noise values (multiples of Grid).
func (n LatticeNoise) Draw(src dp.Source, dim int) ([]float64, error) {
	return n.Release(src, make([]float64, dim))
}

// Release returns v rounded to the grid plus noise, coordinate by
// coordinate (dp.GridLaplaceVector). Every value is a multiple of Grid.
func (n LatticeNoise) Release(src dp.Source, v []float64) ([]float64, error) {
	if src == nil {
		return nil, errors.New("lattice noise: nil randomness source")
	}
	return dp.GridLaplaceVector(src, v, n.Grid, n.Scale)
}
