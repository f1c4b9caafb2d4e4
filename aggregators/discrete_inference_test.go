package aggregators_test

import (
	"testing"

	"github.com/dpsurv/dpsurv/regression"
)

// A discrete release carries the interval release (noisy Hessians whose
// budgets with epsilon_fit sum to epsilon) and, per coefficient, the
// honest limits around the de-biased estimate (beta only: alpha's are
// withheld, its note in coefficient_interval_method); Ext-Out-Pert also
// keeps its labelled noise-only limits (released ± the noise quantile).
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
			if df.IntervalMethod != regression.IntervalBootstrap+regression.IntervalAlphaNote || df.AlphaLower != nil ||
				len(df.AlphaDebiased) != len(df.Alpha) || len(df.BetaUpper) != len(df.Beta) || len(df.BetaDebiased) != len(df.Beta) {
				t.Fatalf("%s: %q, %d/%d alpha, %d/%d beta limits", method, df.IntervalMethod, len(df.AlphaLower), len(df.Alpha), len(df.BetaUpper), len(df.Beta))
			}
			var sum float64
			for _, h := range df.Hessians {
				sum += h.Epsilon
			}
			if len(df.Hessians) == 0 || sum != df.EpsilonInterval || df.EpsilonFit+df.EpsilonInterval != m.Epsilon ||
				df.IntervalEpsilonFraction != regression.DefaultIntervalFraction {
				t.Errorf("%s: %d hessians of epsilon %v, epsilon_interval %v, epsilon_fit %v, epsilon %v", method, len(df.Hessians), sum, df.EpsilonInterval, df.EpsilonFit, m.Epsilon)
			}
			for j, b := range df.BetaDebiased {
				if !(df.BetaLower[j] < b && b < df.BetaUpper[j]) {
					t.Errorf("%s beta %d: de-biased %v outside [%v, %v]", method, j, b, df.BetaLower[j], df.BetaUpper[j])
				}
			}
			if method == "objective" {
				if df.NoiseOnlyBetaLower != nil {
					t.Errorf("objective: noise-only limits %v", df.NoiseOnlyBetaLower)
				}
				continue
			}
			for j, b := range df.Beta {
				lo, hi := df.NoiseOnlyBetaLower[j], df.NoiseOnlyBetaUpper[j]
				if !(lo < float64(b) && float64(b) < hi) || (hi-lo)/2 < df.Noise.Scale*2.99 || (hi-lo)/2 > df.Noise.Scale*3.01 {
					t.Errorf("beta %d: %v not centred in [%v, %v] of half-width scale x ln 20 (scale %v)", j, b, lo, hi, df.Noise.Scale)
				}
			}
		}
	}
}
