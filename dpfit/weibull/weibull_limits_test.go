package weibull

import (
	"github.com/dpsurv/dpsurv/dpfit"

	"math"
	"testing"
)

// TestBoundScaleLimits: a Weibull scale limit outside [1e-15, 1e15]
// time_max (the old main published 2457816997797660500000 from the search
// bracket) is never published as a number.
func TestBoundScaleLimits(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for _, tc := range []struct {
		lo, hi         float64
		wantLo, wantHi float64
		note           string
	}{
		{0.2, 3, 0.2, 3, ""},
		{0.2, 2457816997797660500000, 0.2, nan, WeibullScaleUnboundedNote},
		{1e-30, 3, 0, 3, WeibullScaleLowerZeroNote},
		{1e-30, 1e30, 0, nan, WeibullScaleLowerZeroNote + "; " + WeibullScaleUnboundedNote},
		{4.85e-44, 1.93e-22, nan, nan, WeibullScaleUnidentifiedNote},
		{1e16, 1e20, nan, nan, WeibullScaleUnidentifiedNote},
		{nan, nan, nan, nan, ""},
	} {
		got, note := WeibullInterval{ScaleLower: tc.lo, ScaleUpper: tc.hi}.BoundScaleLimits()
		same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
		if !same(got.ScaleLower, tc.wantLo) || !same(got.ScaleUpper, tc.wantHi) || note != tc.note {
			t.Errorf("[%g, %g] -> [%g, %g] %q, want [%g, %g] %q", tc.lo, tc.hi, got.ScaleLower, got.ScaleUpper, note, tc.wantLo, tc.wantHi, tc.note)
		}
	}
}

// TestPValueBound: a Monte-Carlo p at its floor is a bound, not an
// estimate.
func TestPValueBound(t *testing.T) {
	t.Parallel()
	floor := 1.0 / 200
	if p, u := dpfit.PValueBound(1.0/200, floor); !math.IsNaN(p) || u != floor {
		t.Errorf("at the floor: p %v upper %v", p, u)
	}
	if p, u := dpfit.PValueBound(2.0/200, floor); p != 0.01 || !math.IsNaN(u) {
		t.Errorf("above the floor: p %v upper %v", p, u)
	}
	if p, u := dpfit.PValueBound(1e-9, 0); p != 1e-9 || !math.IsNaN(u) {
		t.Errorf("no calibration: p %v upper %v", p, u)
	}
	if p, u := dpfit.PValueBound(math.NaN(), floor); !math.IsNaN(p) || !math.IsNaN(u) {
		t.Errorf("no test: p %v upper %v", p, u)
	}
}
