package app

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/schemas"
)

// ColumnsConfig is schema.columns: the input column names, each defaulting
// to its canonical name (id, time, event, cohort, site, observed_at).
type ColumnsConfig struct {
	ID         string `yaml:"id"`
	Time       string `yaml:"time"`
	Event      string `yaml:"event"`
	Cohort     string `yaml:"cohort"`
	Site       string `yaml:"site"`
	ObservedAt string `yaml:"observed_at"`
}

// optionalColumns are the input columns a message may lack.
var optionalColumns = []string{"site", "observed_at"}

// eventTime reports whether an aggregate windows by observed_at.
func (c Config) eventTime() bool {
	for _, a := range c.Aggregators {
		if a.Window.Time == aggregators.TimeEvent {
			return true
		}
	}
	return false
}

// inputSpec is the schemas.Spec of the configured input. An optional
// column (site, observed_at) is read only when the configuration uses it:
// listed in schema.public (copied by the sanitizer) or, observed_at, by an
// event-time aggregate; otherwise it is skipped, never read, validated or
// carried into a dead letter. A public optional column is nullable (a
// message without it gives null) unless schema.required lists it, or,
// observed_at, an event-time aggregate windows by it.
func (c Config) inputSpec() schemas.Spec {
	cols := schemas.Columns{ID: c.Schema.Columns.ID, Time: c.Schema.Columns.Time, Event: c.Schema.Columns.Event,
		Cohort: c.Schema.Columns.Cohort, Site: c.Schema.Columns.Site, ObservedAt: c.Schema.Columns.ObservedAt}.WithDefaults()
	spec := schemas.Spec{Cohorts: c.Schema.Cohorts, TimeUnit: c.Schema.TimeUnit, Covariates: c.Schema.Covariates, Columns: cols}
	public := func(f string) bool { return slices.Contains(c.Schema.Public, f) }
	required := func(f string) bool { return slices.Contains(c.Schema.Required, f) }
	switch {
	case public("site") && required("site"):
		spec.RequireSite = true
	case public("site"):
		spec.NullableSite = true
	default:
		spec.SkipSite = true
	}
	switch {
	case public("observed_at") && (required("observed_at") || c.eventTime()):
		spec.RequireObservedAt = true
	case public("observed_at"):
		spec.NullableObservedAt = true
	case c.eventTime():
		// read for the windows; a message without it is skipped by them
	default:
		spec.SkipObservedAt = true
	}
	return spec
}

// validateInputSchema checks schema.required, schema.columns and that
// schema.time_max is at least the time unit's resolution.
func (c Config) validateInputSchema() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	seen := map[string]bool{}
	for i, r := range c.Schema.Required {
		switch {
		case !slices.Contains(optionalColumns, r):
			add("schema.required[%d]: %q is not an optional column (site or observed_at; the others are always required)", i, r)
		case seen[r]:
			add("schema.required[%d]: %q listed twice", i, r)
		case !slices.Contains(c.Schema.Public, r):
			add("schema.required[%d]: %q is not in schema.public: a column outside the configuration is never read, so it cannot be required", i, r)
		}
		seen[r] = true
	}
	// Times are published as whole multiples of the time unit (the
	// sanitizer rounds to the unit and clamps to [0, floor(time_max)]): a
	// time_max below one unit would publish every time as 0.
	if c.Schema.TimeMax > 0 && !math.IsInf(c.Schema.TimeMax, 0) && c.Schema.TimeMax < 1 {
		add("schema.time_max: %v is below the resolution of the time unit: times are published as whole %s, so every time would be 0; use a finer schema.time_unit or a time_max of at least 1", c.Schema.TimeMax, c.Schema.TimeUnit)
	}
	cc := c.Schema.Columns
	names := map[string]string{}
	for _, kv := range [][2]string{
		{"id", cc.ID}, {"time", cc.Time}, {"event", cc.Event},
		{"cohort", cc.Cohort}, {"site", cc.Site}, {"observed_at", cc.ObservedAt},
	} {
		name := kv[1]
		if name == "" {
			name = kv[0]
		}
		if other, dup := names[name]; dup {
			add("schema.columns.%s: input column %q is also the column of %s", kv[0], name, other)
			continue
		}
		names[name] = kv[0]
	}
	for i, cv := range c.Schema.Covariates {
		if f, clash := names[cv]; clash {
			add("schema.covariates[%d]: %q is the input column of %s (schema.columns)", i, cv, f)
		}
	}
	return errs
}
