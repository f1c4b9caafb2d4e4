package aggregators

import (
	"strings"
	"testing"
	"time"
)

// An aggregate whose params are another kind's is refused where it is
// built, not run with the kind's defaults in their place (the defaults
// leave such params as they are, so Validate still sees them).
func TestNewAggregateRefusesAnotherKindsParams(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		params Params
	}{
		{KindKM, WeibullParams{Rungs: 200}},
		{KindWeibull, KMParams{BinWidth: 2}},
		{KindDiscrete, KMParams{}},
		{KindKM, &KMParams{BinWidth: 2}}, // a pointer is not the kind's params either
	} {
		cfg := testKMConfig("x", Window{Size: time.Minute})
		cfg.Kind, cfg.Params = tc.kind, tc.params
		_, err := newAggregate(cfg)
		if err == nil || !strings.Contains(err.Error(), "params: ") || !strings.Contains(err.Error(), "are not the params of kind "+tc.kind) {
			t.Errorf("%s with %T: newAggregate error %v, want the params refused", tc.kind, tc.params, err)
		}
		if d := cfg.withDefaults(); d.Params != tc.params {
			t.Errorf("%s with %T: defaults replaced the params by %#v", tc.kind, tc.params, d.Params)
		}
	}
}
