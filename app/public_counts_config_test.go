package app

import (
	"strings"
	"testing"
)

// Review finding 2: an aggregate that releases a window's exact record
// count (discrete; weibull saa) beside add/remove-one aggregates on the same
// input undoes their presence protection. Such a mix is refused with a
// field-path error unless ledger.allow_public_counts is set; then the
// add/remove-one aggregates are marked to state it in their releases.
func TestPublicCountsBesideAddRemoveRefused(t *testing.T) {
	t.Parallel()
	discrete := "\n  - name: discrete-daily\n    kind: discrete\n    epsilon: 1\n    window: {size: 24h}\n" +
		"    params: {covariates: [age], centre: [60], scale: [15]}\nledger:"
	cases := []struct {
		name, from, to, want string
	}{
		{"discrete beside km", "\nledger:", discrete, "aggregators[3].kind: \"discrete-daily\" releases its window's exact record count"},
		{"saa beside km", "params: {method: lsp, rungs: 200}", "params: {method: saa}", "aggregators[2].params.method: \"weibull-daily\" releases its window's exact record count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			y := edited(t, aggYAML, tc.from, tc.to)
			_, err := ParseConfig([]byte(y))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ledger.allow_public_counts") {
				t.Fatalf("want a refusal containing %q, got %v", tc.want, err)
			}
			// Acknowledged: accepted, and only the add/remove-one
			// aggregates are marked.
			cfg, err := ParseConfig([]byte(strings.Replace(y, "  checkpoint_interval: 10s", "  checkpoint_interval: 10s\n  allow_public_counts: true", 1)))
			if err != nil {
				t.Fatalf("with allow_public_counts: %v", err)
			}
			acs, err := cfg.AggregatorConfigs()
			if err != nil {
				t.Fatal(err)
			}
			for _, ac := range acs {
				if want := !ac.ReleasesExactCount(); ac.CountsPublicElsewhere != want {
					t.Errorf("%s: CountsPublicElsewhere %v, want %v", ac.Name, ac.CountsPublicElsewhere, want)
				}
			}
		})
	}
	// Without an exact-count aggregate nothing is marked.
	_, acs := aggregatorConfigs(t, aggYAML)
	for _, ac := range acs {
		if ac.CountsPublicElsewhere {
			t.Errorf("%s marked without an exact-count aggregate", ac.Name)
		}
	}
}

// Issue 22 finding 2: with output.sanitized_topic every aggregate is marked
// to state that presence and counts are public through it; without it
// (allowed when aggregators are configured: central releases only) none
// is; a service with neither a sanitized topic nor aggregators is refused.
func TestSanitizedTopicMarksPresencePublic(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, yaml string
		want       bool
	}{
		{"with a sanitized topic", aggYAML, true},
		{"central releases only", strings.Replace(aggYAML, "  sanitized_topic: ehr.tte.sanitized\n", "", 1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.yaml == aggYAML && !c.want {
				t.Fatal("test case did not change the YAML")
			}
			_, acs := aggregatorConfigs(t, c.yaml)
			for _, ac := range acs {
				if ac.ReleasesExactCount() {
					continue
				}
				if ac.ReplaceOneAccounting != c.want || (ac.ChargedEpsilon() == 2*ac.Epsilon) != c.want {
					t.Errorf("%s: replace-one accounting %v (charged %v of epsilon %v), want %v", ac.Name, ac.ReplaceOneAccounting, ac.ChargedEpsilon(), ac.Epsilon, c.want)
				}
				if ac.PresencePublicViaSanitized != c.want {
					t.Errorf("%s: PresencePublicViaSanitized %v, want %v", ac.Name, ac.PresencePublicViaSanitized, c.want)
				}
			}
		})
	}
	y := strings.Replace(validYAML, "  sanitized_topic: ehr.tte.sanitized\n", "", 1)
	if y == validYAML {
		t.Fatal("test YAML has no sanitized_topic line")
	}
	if _, err := ParseConfig([]byte(y)); err == nil || !strings.Contains(err.Error(), "output.sanitized_topic: required unless aggregators are configured") {
		t.Fatalf("no sanitized topic and no aggregators: %v", err)
	}
}
