package dp

import (
	"math"
	"testing"
)

// rationalScale strips the common factors of two with one TrailingZeros64:
// it must give the pair the halving loop gave (s odd or t = 1), for scales
// across the range the mechanisms use, exact dyadic ones included.
func TestRationalScaleLowestTerms(t *testing.T) {
	loop := func(scale float64) (uint64, uint64) {
		t := uint64(1) << maxDenBits
		s := uint64(math.Ceil(scale * float64(t)))
		for s%2 == 0 && t > 1 {
			s /= 2
			t /= 2
		}
		return s, t
	}
	scales := []float64{math.SmallestNonzeroFloat64, 1e-12, 0x1p-30, 0x1p-29, 0.5, 1, 2, 3, 1024, 1e6, 0.1, 1 / 3.0, math.Pi, MaxNoiseScale}
	for x := 1e-9; x < MaxNoiseScale; x *= 1.37 {
		scales = append(scales, x, math.Ldexp(math.Round(math.Ldexp(x, 10)), -10))
	}
	for _, scale := range scales {
		if !(scale > 0) || scale > MaxNoiseScale {
			continue
		}
		s, d, err := rationalScale(scale)
		if err != nil {
			t.Fatalf("rationalScale(%v): %v", scale, err)
		}
		ws, wd := loop(scale)
		if s != ws || d != wd {
			t.Errorf("rationalScale(%v) = %d/%d, want %d/%d", scale, s, d, ws, wd)
		}
	}
}
