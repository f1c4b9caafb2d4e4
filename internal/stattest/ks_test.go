package stattest

import (
	"math"
	"testing"
)

// KS of a known sample: the uniform CDF against {0.1, 0.2, 0.9} has its
// largest gap 2/3 - 0.2 just after 0.2, and the sample is left unsorted.
func TestKS(t *testing.T) {
	xs := []float64{0.9, 0.1, 0.2}
	uniform := func(x float64) float64 { return math.Min(1, math.Max(0, x)) }
	if d, want := KS(xs, uniform), 2.0/3-0.2; math.Abs(d-want) > 1e-12 {
		t.Errorf("KS = %v, want %v", d, want)
	}
	if xs[0] != 0.9 {
		t.Errorf("KS sorted its argument: %v", xs)
	}
}

// KSCritical at the textbook levels: 1.358/sqrt(n) at 0.05, 1.949/sqrt(n)
// at 0.001.
func TestKSCritical(t *testing.T) {
	for _, tc := range []struct{ alpha, c float64 }{{0.05, 1.3581}, {0.001, 1.9495}} {
		if got := KSCritical(100, tc.alpha) * 10; math.Abs(got-tc.c) > 1e-4 {
			t.Errorf("KSCritical(100, %v) * sqrt(100) = %.5f, want %.4f", tc.alpha, got, tc.c)
		}
	}
}
