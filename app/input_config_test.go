package app

import (
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
)

// Issue 21: schema.required and schema.columns (documented in
// docs/producers.md; schema.columns used to be refused as an unknown key),
// time_max below the time unit's resolution, and the optional columns the
// validator reads.
func TestInputSchemaConfig(t *testing.T) {
	t.Parallel()
	withSchema := func(extra string) string {
		return strings.Replace(validYAML, "  public: [event, age]\n", extra, 1)
	}
	for _, tc := range []struct {
		name, schema, want string // want "" = valid
	}{
		{"columns renamed", "  public: [event, age]\n  columns: {id: patient_ref, time: days, cohort: arm}\n", ""},
		{"required public site", "  public: [event, site]\n  required: [site]\n", ""},
		{"required not public", "  public: [event]\n  required: [site]\n", "schema.required[0]"},
		{"required not optional", "  public: [event]\n  required: [time]\n", "schema.required[0]"},
		{"required twice", "  public: [event, site]\n  required: [site, site]\n", "schema.required[1]"},
		{"two columns one name", "  public: [event]\n  columns: {id: x, time: x}\n", "schema.columns.time"},
		{"covariate is a column", "  public: [event]\n  columns: {site: age}\n", "schema.covariates[0]"},
		{"unknown column key", "  public: [event]\n  columns: {patient: x}\n", "schema.columns.patient"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(withSchema(tc.schema)))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
	t.Run("time_max below one unit", func(t *testing.T) {
		_, err := ParseConfig([]byte(strings.Replace(validYAML, "time_max: 5000", "time_max: 0.5", 1)))
		if err == nil || !strings.Contains(err.Error(), "schema.time_max") || !strings.Contains(err.Error(), "resolution") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("spec", func(t *testing.T) {
		cfg, err := ParseConfig([]byte(withSchema("  public: [event, age]\n  columns: {id: patient_ref}\n")))
		if err != nil {
			t.Fatal(err)
		}
		s := cfg.Spec()
		if s.Columns.ID != "patient_ref" || s.Columns.Time != "time" || !s.SkipSite || !s.SkipObservedAt {
			t.Errorf("not public: spec %+v, want site and observed_at skipped, id renamed", s)
		}
		cfg.Schema.Public = []string{"event", "site", "observed_at"}
		cfg.Schema.Required = []string{"site"}
		if s := cfg.Spec(); !s.RequireSite || !s.NullableObservedAt || s.SkipSite || s.SkipObservedAt {
			t.Errorf("public: spec %+v, want site required, observed_at nullable", s)
		}
		cfg.Schema.Public = []string{"event"}
		cfg.Schema.Required = nil
		cfg.Aggregators = []AggregatorConfig{{Window: aggregators.Window{Time: aggregators.TimeEvent}}}
		if s := cfg.Spec(); s.SkipObservedAt || s.NullableObservedAt || s.RequireObservedAt {
			t.Errorf("event time: spec %+v, want observed_at read as before", s)
		}
	})
}
