package schemas

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
)

// Schema names, carried in the schema-level metadata key MetaSchema.
const (
	InputSchemaName     = "tte.v1"
	SanitizedSchemaName = "tte.sanitized.v1"
)

// Metadata keys. MetaSchema and MetaTimeUnit are schema-level; the others are
// field-level keys used by the sanitizers to describe each released field.
const (
	MetaSchema        = "dpsurv.schema"
	MetaTimeUnit      = "dpsurv.time_unit"
	MetaMechanism     = "dpsurv.mechanism"
	MetaGuarantee     = "dpsurv.guarantee"
	MetaEpsilon       = "dpsurv.epsilon"
	MetaWindow        = "dpsurv.window"
	MetaWorstCaseLoss = "dpsurv.worst_case_loss"
	// MetaVersionPairLoss: the exact worst-case loss of two published
	// versions of one record's field (replay-stable noise; docs/privacy.md).
	MetaVersionPairLoss = "dpsurv.version_pair_loss"
	MetaNeighbouring    = "dpsurv.neighbouring"      // field- or schema-level: e.g. "replace-one"
	MetaMechanismVer    = "dpsurv.mechanism_version" // field-level: version that enters the keyed PRF
	MetaPublicField     = "dpsurv.public"            // field-level: "true" when the config marks the field public
	MetaNote            = "dpsurv.note"              // field-level: what the guarantee does not promise
	MetaRRRP            = "dpsurv.rrr_p"             // field-level: randomized response's keep probability
	canonicalIDName     = "id"
	canonicalTimeName   = "time"
	canonicalEventName  = "event"
	canonicalCohort     = "cohort"
	canonicalSite       = "site"
	canonicalObserved   = "observed_at"
)

// Column indices in canonical records. Covariates start at ColFirstCovariate,
// in Spec order; site and observed_at (when present) follow the covariates,
// use SiteIndex / ObservedAtIndex to locate them.
const (
	ColID             = 0
	ColTime           = 1
	ColEvent          = 2
	ColCohort         = 3
	ColFirstCovariate = 4
)

// Columns names the input columns. An empty field means the default name
// (see DefaultColumns), so the zero value reads the default layout.
type Columns struct {
	ID, Time, Event, Cohort, Site, ObservedAt string
}

// DefaultColumns returns id, time, event, cohort, site, observed_at.
func DefaultColumns() Columns {
	return Columns{
		ID:         canonicalIDName,
		Time:       canonicalTimeName,
		Event:      canonicalEventName,
		Cohort:     canonicalCohort,
		Site:       canonicalSite,
		ObservedAt: canonicalObserved,
	}
}

// WithDefaults fills every empty name with its default.
func (c Columns) WithDefaults() Columns {
	d := DefaultColumns()
	for _, f := range [...]struct {
		name *string
		def  string
	}{{&c.ID, d.ID}, {&c.Time, d.Time}, {&c.Event, d.Event}, {&c.Cohort, d.Cohort}, {&c.Site, d.Site}, {&c.ObservedAt, d.ObservedAt}} {
		if *f.name == "" {
			*f.name = f.def
		}
	}
	return c
}

// Spec is the public configuration of the input: the cohort label list, the
// time unit, the covariates to read and the input column names.
type Spec struct {
	Cohorts    []string // public label list; the index is the label code
	TimeUnit   string   // e.g. "days" (goes into schema metadata)
	Covariates []string // covariate column names to read (float64); rows missing one, or non-finite, are dead-lettered
	Columns    Columns  // input column names; empty names mean the defaults
	// RequireSite and RequireObservedAt make the optional columns
	// required: a message without the column is dead-lettered
	// (missing_field) instead of validated without it. Set them when a
	// later stage needs the column (e.g. it is configured public).
	RequireSite, RequireObservedAt bool
	// SkipSite and SkipObservedAt leave an optional column out of the
	// configuration: it is never read, validated, copied or carried (a
	// column no later stage uses must cost nothing, whatever a message
	// puts in it).
	SkipSite, SkipObservedAt bool
	// NullableSite and NullableObservedAt make an optional column that a
	// later stage wants (a public one) optional for the producer: a
	// message without it gets the column all null, a null value is kept
	// as null, instead of dead-lettering (missing_field).
	NullableSite, NullableObservedAt bool
}

// Validate checks the spec: at least one cohort label, labels non-empty,
// valid UTF-8 and distinct; a non-empty time unit; covariate names non-empty,
// distinct, and clashing neither with an input column name nor with a
// canonical column name; input column names distinct.
func (s Spec) Validate() error {
	var errs []error
	if len(s.Cohorts) == 0 {
		errs = append(errs, errors.New("cohorts: at least one label is required"))
	}
	if len(s.Cohorts) > 1<<20 {
		errs = append(errs, fmt.Errorf("cohorts: %d labels exceed the limit of %d", len(s.Cohorts), 1<<20))
	}
	seen := make(map[string]int, len(s.Cohorts))
	for i, c := range s.Cohorts {
		switch {
		case c == "":
			errs = append(errs, fmt.Errorf("cohorts[%d]: empty label", i))
		case !utf8.ValidString(c):
			errs = append(errs, fmt.Errorf("cohorts[%d]: label is not valid UTF-8", i))
		default:
			if j, dup := seen[c]; dup {
				errs = append(errs, fmt.Errorf("cohorts[%d]: label %q repeats cohorts[%d]", i, c, j))
			}
			seen[c] = i
		}
	}
	for _, c := range []struct {
		name                    string
		require, skip, nullable bool
	}{{"site", s.RequireSite, s.SkipSite, s.NullableSite}, {"observed_at", s.RequireObservedAt, s.SkipObservedAt, s.NullableObservedAt}} {
		if c.skip && (c.require || c.nullable) || c.require && c.nullable {
			errs = append(errs, fmt.Errorf("%s: at most one of required, skipped and nullable", c.name))
		}
	}
	if strings.TrimSpace(s.TimeUnit) == "" {
		errs = append(errs, errors.New("time_unit: required (e.g. \"days\")"))
	}
	cols := s.Columns.WithDefaults()
	names := map[string]string{}
	for _, kv := range [][2]string{
		{"columns.id", cols.ID}, {"columns.time", cols.Time}, {"columns.event", cols.Event},
		{"columns.cohort", cols.Cohort}, {"columns.site", cols.Site}, {"columns.observed_at", cols.ObservedAt},
	} {
		if other, dup := names[kv[1]]; dup {
			errs = append(errs, fmt.Errorf("%s: name %q is also used by %s", kv[0], kv[1], other))
			continue
		}
		names[kv[1]] = kv[0]
	}
	canonical := map[string]bool{canonicalIDName: true, canonicalTimeName: true, canonicalEventName: true,
		canonicalCohort: true, canonicalSite: true, canonicalObserved: true}
	covSeen := map[string]int{}
	for i, c := range s.Covariates {
		switch {
		case c == "":
			errs = append(errs, fmt.Errorf("covariates[%d]: empty name", i))
		case canonical[c]:
			errs = append(errs, fmt.Errorf("covariates[%d]: name %q clashes with a canonical column", i, c))
		case names[c] != "":
			errs = append(errs, fmt.Errorf("covariates[%d]: name %q is the input column of %s", i, c, names[c]))
		default:
			if j, dup := covSeen[c]; dup {
				errs = append(errs, fmt.Errorf("covariates[%d]: name %q repeats covariates[%d]", i, c, j))
			}
			covSeen[c] = i
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("schemas: invalid spec: %w", errors.Join(errs...))
	}
	return nil
}

// CohortType is the canonical cohort column type: dictionary<int32, utf8>.
// In canonical records the dictionary is exactly Spec.Cohorts, so an index is
// the label code.
var CohortType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// ObservedAtType is the canonical observed_at type: timestamp[us, tz=UTC].
var ObservedAtType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// CanonicalSchema returns the schema of validated batches:
//
//	id: utf8; time: float64; event: bool; cohort: dictionary<int32, utf8>;
//	one float64 per covariate in Spec order; then site: utf8 (if withSite)
//	and observed_at: timestamp[us, UTC] (if withObservedAt).
//
// Every column is non-null. Schema metadata: dpsurv.schema = tte.v1,
// dpsurv.time_unit = Spec.TimeUnit.
func CanonicalSchema(spec Spec, withSite, withObservedAt bool) *arrow.Schema {
	return canonicalSchema(spec, withSite, withObservedAt, false)
}

// SiteDictType is the canonical site type when the producer sent site
// dictionary-encoded: the dictionary is kept (its entries referenced by
// the rows, never copied per row), holding the entries the good rows use.
var SiteDictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// canonicalSchema is CanonicalSchema with the site column a dictionary
// (SiteDictType) when siteDict is set; site and observed_at are nullable
// fields when the spec makes them so.
func canonicalSchema(spec Spec, withSite, withObservedAt, siteDict bool) *arrow.Schema {
	fields := make([]arrow.Field, 0, 6+len(spec.Covariates))
	fields = append(fields,
		arrow.Field{Name: canonicalIDName, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: canonicalTimeName, Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: canonicalEventName, Type: arrow.FixedWidthTypes.Boolean},
		arrow.Field{Name: canonicalCohort, Type: CohortType},
	)
	for _, c := range spec.Covariates {
		fields = append(fields, arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Float64})
	}
	if withSite {
		var dt arrow.DataType = arrow.BinaryTypes.String
		if siteDict {
			dt = SiteDictType
		}
		fields = append(fields, arrow.Field{Name: canonicalSite, Type: dt, Nullable: spec.NullableSite})
	}
	if withObservedAt {
		fields = append(fields, arrow.Field{Name: canonicalObserved, Type: ObservedAtType, Nullable: spec.NullableObservedAt})
	}
	md := arrow.NewMetadata([]string{MetaSchema, MetaTimeUnit}, []string{InputSchemaName, spec.TimeUnit})
	return arrow.NewSchema(fields, &md)
}

// SiteIndex returns the index of the site column in a canonical schema, or -1.
func SiteIndex(s *arrow.Schema) int { return lastIndex(s, canonicalSite) }

// ObservedAtIndex returns the index of the observed_at column in a canonical
// schema, or -1.
func ObservedAtIndex(s *arrow.Schema) int { return lastIndex(s, canonicalObserved) }

func lastIndex(s *arrow.Schema, name string) int {
	idx := s.FieldIndices(name)
	if len(idx) == 0 {
		return -1
	}
	return idx[len(idx)-1]
}

// RenameToInput maps canonical column names to the spec's input column names
// (for FileWriter, so that an output file keeps the input's column names).
// Covariates keep their names.
func (s Spec) RenameToInput() map[string]string {
	c := s.Columns.WithDefaults()
	return map[string]string{
		canonicalIDName:    c.ID,
		canonicalTimeName:  c.Time,
		canonicalEventName: c.Event,
		canonicalCohort:    c.Cohort,
		canonicalSite:      c.Site,
		canonicalObserved:  c.ObservedAt,
	}
}

// FieldMetadata is field-level metadata from alternating keys and values
// (key1, value1, key2, value2, ...), in that order.
func FieldMetadata(kv ...string) arrow.Metadata {
	keys, vals := make([]string, 0, len(kv)/2), make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		keys = append(keys, kv[i])
		vals = append(vals, kv[i+1])
	}
	return arrow.NewMetadata(keys, vals)
}

// SanitizedSchema is the tte.sanitized.v1 schema of the given fields: the
// schema-level metadata names the schema and the time unit. Every producer
// of sanitized records (the sanitizer chain, the baselines) builds its
// schema here.
func SanitizedSchema(fields []arrow.Field, timeUnit string) *arrow.Schema {
	md := arrow.NewMetadata([]string{MetaSchema, MetaTimeUnit}, []string{SanitizedSchemaName, timeUnit})
	return arrow.NewSchema(fields, &md)
}
