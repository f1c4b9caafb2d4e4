package aggregators_test

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dpsurv/dpsurv/aggregators"
)

// DecodeParams reads the typed params of each kind from the YAML node and
// refuses keys of other kinds and values of the wrong type by FieldError.
func TestDecodeParamsFromYAML(t *testing.T) {
	decode := func(kind, src string) (aggregators.Params, error) {
		t.Helper()
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil {
			t.Fatal(err)
		}
		return aggregators.DecodeParams(kind, &n)
	}
	p, err := decode("weibull", "{bin_width: 2.5, method: saa, omega: 4, gamma: 8, rungs: 300.0}")
	if err != nil || p.BinWidth != 2.5 || p.Method != "saa" || p.Omega != 4 || p.Gamma != 8 || p.Rungs != 300 {
		t.Fatalf("weibull params %+v, %v", p, err)
	}
	p, err = decode("km", "{conf: 0.9, max_noise_std_err: 0.2, logrank_sims: -1, interval_sims: 50}")
	if err != nil || p.Conf != 0.9 || p.MaxNoiseStdErr != 0.2 || p.LogRankSims != -1 || p.IntervalSims != 50 {
		t.Fatalf("km params %+v, %v", p, err)
	}
	p, err = decode("discrete", "{covariates: [age], centre: [60], scale: [15.5], link: logit, knots: 4, steps: 10}")
	if err != nil || p.Covariates[0] != "age" || p.Centre[0] != 60 || p.Scale[0] != 15.5 || p.Link != "logit" || p.Knots != 4 || p.Steps != 10 {
		t.Fatalf("discrete params %+v, %v", p, err)
	}
	if p, err := decode("km", ""); err != nil || p.BinWidth != 0 {
		t.Fatalf("empty params %+v, %v", p, err)
	}
	for _, tc := range []struct {
		kind, src, path string
		sentinel        error
		msg             string
	}{
		{"km", "{rungs: 3}", "params.rungs", aggregators.ErrUnknownField, "params.rungs: unknown for kind km"},
		{"weibull", "{rungs: 2.5}", "params.rungs", aggregators.ErrWrongType, "params.rungs: want an integer, got 2.5"},
		{"km", "{method: 3}", "params.method", aggregators.ErrWrongType, "params.method: want a string, got int"},
		{"km", "{bin_width: '7'}", "params.bin_width", aggregators.ErrWrongType, "params.bin_width: want a number, got string"},
		{"km", "{logrank_sims: 2000000}", "params.logrank_sims", aggregators.ErrInvalid, "params.logrank_sims: want an integer of at most 1e6 in size, got 2000000"},
		{"discrete", "{scale: [1, x]}", "params.scale[1]", aggregators.ErrWrongType, "params.scale[1]: want a number, got string"},
		{"discrete", "{covariates: age}", "params.covariates", aggregators.ErrWrongType, "params.covariates: want a list of names, got string"},
		{"km", "[1, 2]", "params", aggregators.ErrWrongType, "params: want a mapping, got []interface {}"},
		// each kind reads only its own keys; a kind that does not exist
		// reads bin_width and method (its kind error is Check's)
		{"weibull", "{conf: 0.9}", "params.conf", aggregators.ErrUnknownField, "params.conf: unknown for kind weibull"},
		{"discrete", "{bin_width: 1}", "params.bin_width", aggregators.ErrUnknownField, "params.bin_width: unknown for kind discrete"},
		{"km", "{knots: 3}", "params.knots", aggregators.ErrUnknownField, "params.knots: unknown for kind km"},
		{"nope", "{bin_width: x}", "params.bin_width", aggregators.ErrWrongType, "params.bin_width: want a number, got string"},
		{"nope", "{omega: 1}", "params.omega", aggregators.ErrUnknownField, "params.omega: unknown for kind nope"},
		{"discrete", "{interval_epsilon_fraction: 0}", "params.interval_epsilon_fraction", aggregators.ErrInvalid,
			"params.interval_epsilon_fraction: must be in (0, 0.5] with the logit link and with output or objective (leave it out for the default 0.5)"},
	} {
		_, err := decode(tc.kind, tc.src)
		var fe *aggregators.FieldError
		if !errors.As(err, &fe) || fe.Path != tc.path || !errors.Is(fe, tc.sentinel) || fe.Error() != tc.msg {
			t.Errorf("%s %s: error %v, want %q", tc.kind, tc.src, err, tc.msg)
		}
	}
}

// The errors of several bad keys come in the order of the keys, whichever
// kind reads them, and the whole-params check after them.
func TestDecodeParamsErrorOrder(t *testing.T) {
	var n yaml.Node
	src := "{steps: x, interval_epsilon_fraction: 0, bogus: 1, centre: [1, y], covariates: 3}"
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	_, err := aggregators.DecodeParams("discrete", &n)
	var paths []string
	for _, e := range aggregators.Errors(err) {
		var fe *aggregators.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a FieldError", e)
		}
		paths = append(paths, fe.Path)
	}
	want := []string{"params.bogus", "params.centre[1]", "params.covariates", "params.steps", "params.interval_epsilon_fraction"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("error paths %v, want %v", paths, want)
	}
}
