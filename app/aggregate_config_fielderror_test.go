package app

import (
	"errors"
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
)

// Aggregator config errors reach the caller as FieldErrors under
// aggregators[i], findable with errors.As (no parsing of the text).
func TestAggregatorConfigErrorsAreFieldErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		from, to, path string
		sentinel       error
	}{
		{"bin_width: 7, conf", "bin_wdth: 7, conf", "aggregators[0].params.bin_wdth", aggregators.ErrUnknownField},
		{"rungs: 200}", "rungs: 2.5}", "aggregators[2].params.rungs", aggregators.ErrWrongType},
		{"cumulative: true, horizon: 365", "cumulative: true", "aggregators[1].window.horizon", aggregators.ErrInvalid},
		{"epsilon: 0.5\n    window", "epsilon: 0\n    window", "aggregators[0].epsilon", aggregators.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			y := edited(t, aggYAML, tc.from, tc.to)
			_, err := ParseConfig([]byte(y))
			if err == nil {
				t.Fatal("accepted")
			}
			var found *aggregators.FieldError
			for _, e := range aggregators.Errors(err) {
				var fe *aggregators.FieldError
				if errors.As(e, &fe) && fe.Path == tc.path {
					found = fe
				}
			}
			if found == nil || !errors.Is(found, tc.sentinel) {
				t.Fatalf("error %v: no FieldError at %s matching %v", err, tc.path, tc.sentinel)
			}
		})
	}
}
