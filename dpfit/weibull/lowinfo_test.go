package weibull

import (
	"math"
	"strings"
	"testing"
)

func TestWeibullLowInformationRule(t *testing.T) {
	t.Parallel()
	fit := func(eps, n float64) WeibullFit {
		return WeibullFit{Method: WeibullMethodLSP, Epsilon: eps, N: n, Params: map[string]float64{"gamma": 10}}
	}
	iv := func(lo, hi float64) *WeibullInterval { return &WeibullInterval{ShapeLower: lo, ShapeUpper: hi} }
	// sampling-only 95% width of ln(shape) with 150 events: 2*1.96*0.78/sqrt(150) = 0.25
	for _, tc := range []struct {
		name   string
		fit    WeibullFit
		iv     *WeibullInterval
		want   bool
		reason string
	}{
		{"non-private", fit(math.Inf(1), 150), nil, false, ""},
		{"whole range", fit(1, 150), iv(0, 10), true, "edge of the public range"},
		{"reaches 0", fit(1, 150), iv(0, 2.8), true, "edge of the public range"},
		{"noise dominates", fit(1, 160), iv(0.24, 1.73), true, "noise dominates"},
		{"sampling dominates", fit(20, 148), iv(1.04, 1.53), false, ""},
		{"few events", fit(1, 10), iv(1, 1.2), true, "event count below"},
		{"few events, no interval", fit(1, 10), nil, true, "event count below"},
		{"no interval", fit(1, 150), nil, false, ""},
		{"interval NaN", fit(1, 150), iv(math.NaN(), math.NaN()), false, ""},
		{"baseline at the edge", WeibullFit{Method: WeibullMethodLaplace, Epsilon: 1, Params: map[string]float64{"gamma": 10}}, iv(3, 10), true, "edge"},
	} {
		got, reason := WeibullLowInformation(tc.fit, tc.iv)
		if got != tc.want || !strings.Contains(reason, tc.reason) || (!got && reason != "") {
			t.Errorf("%s: %v %q, want %v %q", tc.name, got, reason, tc.want, tc.reason)
		}
	}
}
