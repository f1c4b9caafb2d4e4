package app

import (
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
)

// edited is base with the first from replaced by to; the test fails when
// from is not in base (the case would test base itself).
func edited(t *testing.T, base, from, to string) string {
	t.Helper()
	y := strings.Replace(base, from, to, 1)
	if y == base {
		t.Fatalf("test case does not change the YAML (%q not found)", from)
	}
	return y
}

// wantConfigError fails the test unless ParseConfig refuses yaml with an
// error that contains want.
func wantConfigError(t *testing.T, yaml, want string) {
	t.Helper()
	if _, err := ParseConfig([]byte(yaml)); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want error containing %q, got %v", want, err)
	}
}

// configEdit is one case of a refusal test: the base YAML with the first
// from replaced by to must be refused with an error containing want.
type configEdit struct{ name, from, to, want string }

// wantEditsRefused runs each edit of base as a subtest (wantConfigError).
func wantEditsRefused(t *testing.T, base string, edits []configEdit) {
	t.Helper()
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			wantConfigError(t, edited(t, base, e.from, e.to), e.want)
		})
	}
}

// aggregatorConfigs parses yaml and returns the config and its aggregates'
// configs, failing the test on any error.
func aggregatorConfigs(t *testing.T, yaml string) (Config, []aggregators.Config) {
	t.Helper()
	cfg, err := ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	acs, err := cfg.AggregatorConfigs()
	if err != nil {
		t.Fatal(err)
	}
	return cfg, acs
}
