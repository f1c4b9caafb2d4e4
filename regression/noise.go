package regression

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// NoiseVector draws b in R^dim with density proportional to
// exp(-||b|| / scale): its norm is Gamma(dim, scale) (shape dim, scale
// `scale`), drawn as scale times a sum of dim standard exponentials -ln U,
// and its direction is uniform on the sphere (normalised standard Gaussians,
// Marsaglia's polar method). Every uniform comes from src.
func NoiseVector(src dp.Source, dim int, scale float64) ([]float64, error) {
	if dim < 1 {
		return nil, fmt.Errorf("noise vector: dimension must be >= 1, got %d", dim)
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("noise vector: scale must be positive and finite, got %v", scale)
	}
	r := scale * gammaInt(src, dim)
	dir := uniformDirection(src, dim)
	for j := range dir {
		dir[j] *= r
	}
	return dir, nil
}

// uniform01 returns a uniform value in (0, 1].
func uniform01(src dp.Source) float64 { return 1 - dp.Float64(src) }

// gammaInt draws Gamma(k, 1) for an integer shape k >= 1 as a sum of k
// standard exponentials.
func gammaInt(src dp.Source, k int) float64 {
	var s float64
	for i := 0; i < k; i++ {
		s -= math.Log(uniform01(src))
	}
	return s
}

// gaussianPair returns two independent standard normals (Marsaglia polar).
func gaussianPair(src dp.Source) (float64, float64) {
	for {
		u := 2*dp.Float64(src) - 1
		v := 2*dp.Float64(src) - 1
		s := u*u + v*v
		if s >= 1 || s == 0 {
			continue
		}
		f := math.Sqrt(-2 * math.Log(s) / s)
		return u * f, v * f
	}
}

// fillGaussian fills out with independent standard normals.
func fillGaussian(src dp.Source, out []float64) {
	for j := 0; j < len(out); j += 2 {
		a, b := gaussianPair(src)
		out[j] = a
		if j+1 < len(out) {
			out[j+1] = b
		}
	}
}

// uniformDirection returns a unit vector uniform on the sphere S^{dim-1}.
func uniformDirection(src dp.Source, dim int) []float64 {
	out := make([]float64, dim)
	for {
		fillGaussian(src, out)
		var ss float64
		for _, v := range out {
			ss += v * v
		}
		if ss > 1e-300 {
			n := math.Sqrt(ss)
			for j := range out {
				out[j] /= n
			}
			return out
		}
	}
}
