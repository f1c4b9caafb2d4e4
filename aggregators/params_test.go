package aggregators_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
	p, err := decode("weibull", "{bin_width: 2.5, method: saa, omega: 4, gamma: 8, rungs: 300.0, interval_sims: 40}")
	if w, ok := p.(aggregators.WeibullParams); err != nil || w != (aggregators.WeibullParams{BinWidth: 2.5, Method: "saa", Omega: 4, Gamma: 8, Rungs: 300, IntervalSims: 40}) {
		t.Fatalf("weibull params %#v (%v), %v", p, ok, err)
	}
	p, err = decode("km", "{bin_width: 3, method: noisy-histogram, conf: 0.9, max_noise_std_err: 0.2, logrank_sims: -1, interval_sims: 50}")
	if k, ok := p.(aggregators.KMParams); err != nil || k != (aggregators.KMParams{BinWidth: 3, Method: "noisy-histogram", Conf: 0.9, MaxNoiseStdErr: 0.2, LogRankSims: -1, IntervalSims: 50}) {
		t.Fatalf("km params %#v (%v), %v", p, ok, err)
	}
	p, err = decode("discrete", "{method: psgld, covariates: [age], centre: [60], scale: [15.5], link: logit, knots: 4, steps: 10}")
	d, ok := p.(aggregators.DiscreteParams)
	if err != nil || !ok || d.Method != "psgld" || d.Covariates[0] != "age" || d.Centre[0] != 60 || d.Scale[0] != 15.5 || d.Link != "logit" || d.Knots != 4 || d.Steps != 10 {
		t.Fatalf("discrete params %#v, %v", p, err)
	}
	// no params: the kind's zero params
	for kind, want := range map[string]aggregators.Params{"km": aggregators.KMParams{}, "weibull": aggregators.WeibullParams{}} {
		if p, err := decode(kind, ""); err != nil || p != want {
			t.Fatalf("%s empty params %#v, %v", kind, p, err)
		}
	}
	if p, err := decode("discrete", "null"); err != nil || fmt.Sprint(p) != fmt.Sprint(aggregators.DiscreteParams{}) {
		t.Fatalf("discrete null params %#v, %v", p, err)
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

// An aggregators entry decodes from YAML with its params kept for
// Resolved, which decodes them into the kind's typed params; an entry
// without params has none (the kind's defaults), and a bad key's error
// moves under the entry's path.
func TestConfigYAMLParamsByKind(t *testing.T) {
	var cs []aggregators.Config
	src := `
- {name: a, kind: km, epsilon: 1, window: {size: 1m}, params: {bin_width: 2, interval_sims: 10}}
- {name: b, kind: weibull, params: {rungs: 50, interval_sims: 40}}
- {name: c, kind: km}
- {name: d, kind: weibull, params: {interval_sims: x, conf: 0.9}}
`
	if err := yaml.Unmarshal([]byte(src), &cs); err != nil {
		t.Fatal(err)
	}
	a, err := cs[0].Resolved()
	if err != nil || a.Name != "a" || a.Epsilon != 1 || a.Window.Size != time.Minute ||
		a.Params != (aggregators.KMParams{BinWidth: 2, IntervalSims: 10}) {
		t.Fatalf("km entry %+v, %v", a, err)
	}
	if b, err := cs[1].Resolved(); err != nil || b.Params != (aggregators.WeibullParams{Rungs: 50, IntervalSims: 40}) {
		t.Fatalf("weibull entry %+v, %v", b, err)
	}
	if c, err := cs[2].Resolved(); err != nil || c.Params != nil {
		t.Fatalf("entry without params %+v, %v", c, err)
	}
	_, err = cs[3].Resolved()
	var paths []string
	for _, e := range aggregators.Errors(aggregators.Prefix("aggregators[3]", err)) {
		var fe *aggregators.FieldError
		if errors.As(e, &fe) {
			paths = append(paths, fe.Path)
		}
	}
	if want := "aggregators[3].params.conf aggregators[3].params.interval_sims"; strings.Join(paths, " ") != want {
		t.Fatalf("error paths %v (%v), want %s", paths, err, want)
	}
}
