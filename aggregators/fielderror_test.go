package aggregators_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
)

// Config errors are FieldErrors: a caller finds the field and the kind of
// problem with errors.As and errors.Is, not by parsing the text.
func TestConfigErrorsAreFieldErrors(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		path     string
		sentinel error
	}{
		{"unknown param", paramsErr("km", map[string]any{"gamma": 3}), "params.gamma", aggregators.ErrUnknownField},
		{"wrong type", paramsErr("km", map[string]any{"bin_width": "wide"}), "params.bin_width", aggregators.ErrWrongType},
		{"discrete list element", paramsErr("discrete", map[string]any{"centre": []any{"x"}}), "params.centre[0]", aggregators.ErrWrongType},
		{"window size", aggregators.Config{Name: "a", Kind: "km", Epsilon: 1, Window: aggregators.Window{Size: 1500 * time.Millisecond},
			Cohorts: []string{"0"}, TimeMax: 10}.Validate(), "window.size", aggregators.ErrInvalid},
		{"covariates", aggregators.Config{Name: "d", Kind: "discrete", Epsilon: 1, Window: aggregators.Window{Size: time.Hour},
			Cohorts: []string{"0"}, TimeMax: 10}.Validate(), "params.covariates", aggregators.ErrRequired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			found := false
			for _, e := range aggregators.Errors(unwrapAggregate(tc.err)) {
				var fe *aggregators.FieldError
				if errors.As(e, &fe) && fe.Path == tc.path {
					found = true
					if !errors.Is(fe, tc.sentinel) {
						t.Errorf("%s: %v does not match %v", fe.Path, fe, tc.sentinel)
					}
				}
			}
			if !found {
				t.Fatalf("no FieldError at %s in %v", tc.path, tc.err)
			}
		})
	}
	pre := aggregators.Prefix("aggregators[2]", paramsErr("km", map[string]any{"gamma": 3, "omega": 1}))
	parts := aggregators.Errors(pre)
	if len(parts) != 2 {
		t.Fatalf("prefixed %d errors, want 2: %v", len(parts), pre)
	}
	var fe *aggregators.FieldError
	if !errors.As(parts[0], &fe) || fe.Path != "aggregators[2].params.gamma" || fe.Error() != "aggregators[2].params.gamma: unknown for kind km" {
		t.Fatalf("prefixed error %v", parts[0])
	}
}

func paramsErr(kind string, m map[string]any) error {
	_, err := aggregators.ParseParams(kind, m)
	return err
}

// unwrapAggregate strips Validate's "aggregate %q: " wrapper.
func unwrapAggregate(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
