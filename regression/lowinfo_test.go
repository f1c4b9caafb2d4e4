package regression

import (
	"math"
	"strings"
	"testing"
)

func TestAssessInformation(t *testing.T) {
	priv := DiscreteResult{Method: MethodOutput, Epsilon: 1, Covariates: []string{"age", "ecog"}}
	with := func(f func(*DiscreteResult)) DiscreteResult {
		r := priv
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name   string
		res    DiscreteResult
		want   bool
		reason string
	}{
		{"mle", DiscreteResult{Method: MethodMLE, Epsilon: Epsilon(math.Inf(1))}, false, ""},
		{"fallback", with(func(r *DiscreteResult) { r.Fallback = true }), true, "fallback"},
		{"wide", with(func(r *DiscreteResult) { r.BetaLower, r.BetaUpper = []float64{-0.2, -3}, []float64{0.5, 4} }), true, "of ecog, [-3, 4]"},
		{"narrow", with(func(r *DiscreteResult) { r.BetaLower, r.BetaUpper = []float64{-0.2, -0.9}, []float64{0.5, 4} }), false, ""},
		{"noise-only wide", with(func(r *DiscreteResult) {
			r.NoiseOnlyBetaLower, r.NoiseOnlyBetaUpper = []float64{-2, 0}, []float64{2, 0.1}
		}), true, "noise-only"},
		{"no interval", priv, true, "not assessed"},
		{"withheld", with(func(r *DiscreteResult) { r.Method, r.IntervalMethod = MethodPSGLD, IntervalPSGLDWithheld }), true, "not assessed: no coefficient limits released (coefficient_interval_method: none: psgld"},
	} {
		got, reason := AssessInformation(tc.res)
		if got != tc.want || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, got, reason, tc.want, tc.reason)
		}
	}
}
