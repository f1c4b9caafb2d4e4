package schemas

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Rows holds canonical rows as Go slices, for tests and generators.
// Covariates is indexed [covariate][row]. Site and ObservedAt are optional:
// nil means the column is absent.
type Rows struct {
	ID         []string
	Time       []float64
	Event      []bool
	Cohort     []int32
	Covariates [][]float64 // [cov][row]
	Site       []string
	ObservedAt []time.Time
}

// BuildCanonical builds a canonical record (CanonicalSchema) from rows. It
// checks what validation guarantees: equal lengths, non-empty UTF-8 ids
// without duplicates, finite times >= 0, cohort codes in range, finite
// covariates.
func BuildCanonical(spec Spec, rows Rows, mem memory.Allocator) (arrow.Record, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("schemas: build canonical: %w", err)
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	n := len(rows.ID)
	bad := func(format string, args ...any) (arrow.Record, error) {
		return nil, fmt.Errorf("schemas: build canonical: "+format, args...)
	}
	if len(rows.Time) != n || len(rows.Event) != n || len(rows.Cohort) != n {
		return bad("column lengths differ: id %d, time %d, event %d, cohort %d", n, len(rows.Time), len(rows.Event), len(rows.Cohort))
	}
	if len(rows.Covariates) != len(spec.Covariates) {
		return bad("%d covariate columns for %d covariates in spec", len(rows.Covariates), len(spec.Covariates))
	}
	for k, c := range rows.Covariates {
		if len(c) != n {
			return bad("covariate %q has %d rows, want %d", spec.Covariates[k], len(c), n)
		}
		for i, x := range c {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return bad("covariate %q row %d is not finite", spec.Covariates[k], i)
			}
		}
	}
	withSite, withObs := rows.Site != nil, rows.ObservedAt != nil
	if withSite && len(rows.Site) != n {
		return bad("site has %d rows, want %d", len(rows.Site), n)
	}
	if withObs && len(rows.ObservedAt) != n {
		return bad("observed_at has %d rows, want %d", len(rows.ObservedAt), n)
	}
	var idBytes, siteBytes int
	for i := 0; i < n; i++ {
		idBytes += len(rows.ID[i])
		if withSite {
			siteBytes += len(rows.Site[i])
		}
	}
	if idBytes > math.MaxInt32 || siteBytes > math.MaxInt32 {
		return bad("string data exceeds the 2 GiB of a utf8 column")
	}
	seen := make(map[string]int, n)
	for i := 0; i < n; i++ {
		if !validID(rows.ID[i]) {
			return bad("row %d: id is empty or not UTF-8", i)
		}
		if j, dup := seen[rows.ID[i]]; dup {
			return bad("row %d: id duplicates row %d", i, j)
		}
		seen[rows.ID[i]] = i
		if t := rows.Time[i]; !(t >= 0) || t > math.MaxFloat64 {
			return bad("row %d: time must be finite and >= 0", i)
		}
		if c := rows.Cohort[i]; c < 0 || int(c) >= len(spec.Cohorts) {
			return bad("row %d: cohort code %d out of range [0, %d)", i, c, len(spec.Cohorts))
		}
	}
	st := &scratch{}
	st.reset(n, len(spec.Covariates), withSite, withObs)
	copy(st.ids, rows.ID)
	copy(st.times, rows.Time)
	copy(st.events, rows.Event)
	copy(st.codes, rows.Cohort)
	for k := range rows.Covariates {
		copy(st.covs[k], rows.Covariates[k])
	}
	if withSite {
		copy(st.sites, rows.Site)
	}
	for i, t := range rows.ObservedAt {
		st.obs[i] = t.UnixMicro()
	}
	v := &Validator{spec: spec, mem: mem}
	v.schemas[schemaKey(withSite, withObs)] = CanonicalSchema(spec, withSite, withObs)
	return v.build(st, withSite, withObs, nil), nil
}

// InputSchema returns the tte.v1 schema BuildInput produces: id utf8, time
// float64, event bool, cohort dictionary<int32, utf8>, float64 covariates,
// with the spec's input column names and metadata dpsurv.schema = tte.v1,
// dpsurv.time_unit.
func InputSchema(spec Spec) *arrow.Schema {
	c := spec.Columns.WithDefaults()
	fields := []arrow.Field{
		{Name: c.ID, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: c.Time, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: c.Event, Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: c.Cohort, Type: CohortType, Nullable: true},
	}
	for _, cv := range spec.Covariates {
		fields = append(fields, arrow.Field{Name: cv, Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	md := arrow.NewMetadata([]string{MetaSchema, MetaTimeUnit}, []string{InputSchemaName, spec.TimeUnit})
	return arrow.NewSchema(fields, &md)
}

// BuildInput builds a raw tte.v1 record (InputSchema) for producing input
// messages. Values are not validated (tests use it to produce bad rows); the
// cohort dictionary holds the distinct given labels in order of first
// appearance. covariates is [cov][row] and may be nil when the spec has none.
func BuildInput(spec Spec, ids []string, times []float64, events []bool, cohorts []string, covariates [][]float64, mem memory.Allocator) (arrow.Record, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	n := len(ids)
	if len(times) != n || len(events) != n || len(cohorts) != n {
		return nil, fmt.Errorf("schemas: build input: column lengths differ: id %d, time %d, event %d, cohort %d", n, len(times), len(events), len(cohorts))
	}
	if len(covariates) != len(spec.Covariates) {
		return nil, fmt.Errorf("schemas: build input: %d covariate columns for %d covariates in spec", len(covariates), len(spec.Covariates))
	}
	for k, c := range covariates {
		if len(c) != n {
			return nil, fmt.Errorf("schemas: build input: covariate %q has %d rows, want %d", spec.Covariates[k], len(c), n)
		}
	}
	b := array.NewRecordBuilder(mem, InputSchema(spec))
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(ids, nil)
	b.Field(1).(*array.Float64Builder).AppendValues(times, nil)
	b.Field(2).(*array.BooleanBuilder).AppendValues(events, nil)
	db := b.Field(3).(*array.BinaryDictionaryBuilder)
	for _, c := range cohorts {
		if err := db.AppendString(c); err != nil {
			return nil, fmt.Errorf("schemas: build input: cohort: %w", err)
		}
	}
	for k, c := range covariates {
		b.Field(4+k).(*array.Float64Builder).AppendValues(c, nil)
	}
	return b.NewRecord(), nil
}
