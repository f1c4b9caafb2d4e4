package schemas

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
)

// The plan of an input schema: where each slot's column is and whether
// its type is one the validator reads.

// plan locates the columns of one input schema.
type plan struct {
	id, time, event, cohort, site, obs int
	cov                                []int
	withSite, withObs                  bool
	errReason                          uint8
	errDetail                          string
}

func (p *plan) used() []int {
	u := []int{p.id, p.time, p.event, p.cohort}
	u = append(u, p.cov...)
	if p.site >= 0 {
		u = append(u, p.site)
	}
	if p.obs >= 0 {
		u = append(u, p.obs)
	}
	return u
}

// slotNames returns the input column name of every slot.
func (v *Validator) slotNames() []string {
	names := []string{v.cols.ID, v.cols.Time, v.cols.Event, v.cols.Cohort, v.cols.Site, v.cols.ObservedAt}
	return append(names, v.spec.Covariates...)
}

type typeClass int

const (
	clsID typeClass = iota
	clsTime
	clsEvent
	clsCohort
	clsCov
	clsSite
	clsObs
)

func (v *Validator) planFor(s *arrow.Schema) plan {
	p := plan{id: -1, time: -1, event: -1, cohort: -1, site: -1, obs: -1}
	md := s.Metadata()
	if i := md.FindKey(MetaSchema); i >= 0 && md.Values()[i] != InputSchemaName {
		p.errReason = rWrongSchema
		p.errDetail = fmt.Sprintf("schema metadata %s is %q, want %q", MetaSchema, md.Values()[i], InputSchemaName)
		return p
	}
	if i := md.FindKey(MetaTimeUnit); i >= 0 && md.Values()[i] != v.spec.TimeUnit {
		p.errReason = rWrongSchema
		p.errDetail = fmt.Sprintf("schema metadata %s is %q, configured time unit is %q", MetaTimeUnit, md.Values()[i], v.spec.TimeUnit)
		return p
	}
	find := func(name string, cls typeClass, required bool) int {
		if p.errReason != rOK {
			return -1
		}
		idx := s.FieldIndices(name)
		switch {
		case len(idx) == 0:
			if required {
				p.errReason = rMissing
				p.errDetail = fmt.Sprintf("column %q not found in input schema", name)
			}
			return -1
		case len(idx) > 1:
			p.errReason = rWrongSchema
			p.errDetail = fmt.Sprintf("column %q appears %d times in input schema", name, len(idx))
			return -1
		}
		dt := s.Field(idx[0]).Type
		if !accepts(cls, dt) {
			p.errReason = rWrongSchema
			p.errDetail = fmt.Sprintf("column %q has unsupported type %s", name, dt)
			return -1
		}
		return idx[0]
	}
	p.id = find(v.cols.ID, clsID, true)
	p.time = find(v.cols.Time, clsTime, true)
	p.event = find(v.cols.Event, clsEvent, true)
	p.cohort = find(v.cols.Cohort, clsCohort, true)
	p.cov = make([]int, len(v.spec.Covariates))
	for k, c := range v.spec.Covariates {
		p.cov[k] = find(c, clsCov, true)
	}
	// An optional column outside the configuration is not looked at.
	if !v.spec.SkipSite {
		p.site = find(v.cols.Site, clsSite, v.spec.RequireSite)
	}
	if !v.spec.SkipObservedAt {
		p.obs = find(v.cols.ObservedAt, clsObs, v.spec.RequireObservedAt)
	}
	// A nullable column the message lacks is in the output, all null.
	p.withSite = p.site >= 0 || v.spec.NullableSite && p.errReason == rOK
	p.withObs = p.obs >= 0 || v.spec.NullableObservedAt && p.errReason == rOK
	return p
}

func isInt(id arrow.Type) bool {
	switch id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isFloat(id arrow.Type) bool { return id == arrow.FLOAT32 || id == arrow.FLOAT64 }

func isString(id arrow.Type) bool { return id == arrow.STRING || id == arrow.LARGE_STRING }

func accepts(cls typeClass, dt arrow.DataType) bool {
	id := dt.ID()
	dictOf := func(ok func(arrow.Type) bool) bool {
		d, isDict := dt.(*arrow.DictionaryType)
		return isDict && ok(d.ValueType.ID())
	}
	strOrInt := func(t arrow.Type) bool { return isString(t) || isInt(t) }
	switch cls {
	case clsID, clsSite, clsCohort:
		return strOrInt(id) || dictOf(strOrInt)
	case clsTime, clsCov:
		return isInt(id) || isFloat(id)
	case clsEvent:
		return id == arrow.BOOL || isInt(id) || isFloat(id)
	case clsObs:
		return id == arrow.TIMESTAMP || id == arrow.DATE32 || id == arrow.DATE64 || isString(id) || dictOf(isString)
	}
	return false
}
