package aggregators_test

import (
	"testing"

	"github.com/dpsurv/dpsurv/regression"
)

// A discrete Ext-Out-Pert release carries per-coefficient intervals around
// its coefficients, of the noise quantile's half-width; Ext-Obj-Pert's
// carries none, with the reason.
func TestDiscreteAggregateIntervals(t *testing.T) {
	for _, method := range []string{"output", "objective"} {
		r := newRig(t, at(1), map[string]float64{"stream": 100}, discConfig("dt", 1, method))
		r.observeDisc(0, discRows("a", 300, 1))
		r.clock.Set(at(61))
		r.tick()
		msgs := r.fits.fits(t)
		if len(msgs) != 1 {
			t.Fatalf("%s: %d releases", method, len(msgs))
		}
		for _, m := range msgs {
			df := m.DiscreteFields
			if method == "objective" {
				if df.BetaLower != nil || df.IntervalMethod != regression.IntervalNone {
					t.Errorf("objective: intervals %v (%q)", df.BetaLower, df.IntervalMethod)
				}
				continue
			}
			if df.IntervalMethod != regression.IntervalNoiseOnly || len(df.AlphaLower) != len(df.Alpha) || len(df.BetaUpper) != len(df.Beta) {
				t.Fatalf("output: %q, %d/%d alpha, %d/%d beta limits", df.IntervalMethod, len(df.AlphaLower), len(df.Alpha), len(df.BetaUpper), len(df.Beta))
			}
			for j, b := range df.Beta {
				lo, hi := df.BetaLower[j], df.BetaUpper[j]
				if !(lo < float64(b) && float64(b) < hi) || (hi-lo)/2 < df.Noise.Scale*2.99 || (hi-lo)/2 > df.Noise.Scale*3.01 {
					t.Errorf("beta %d: %v not centred in [%v, %v] of half-width scale x ln 20 (scale %v)", j, b, lo, hi, df.Noise.Scale)
				}
			}
		}
	}
}
