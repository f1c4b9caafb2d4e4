package schemas

import (
	"math"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
)

// Reading an input record's columns into the scratch, row checks in the
// contract's order (id, time, event, cohort, covariates, site,
// observed_at).

// fillRecord reads every used column of rec into st, marking failures.
func (v *Validator) fillRecord(rec arrow.Record, p *plan, st *scratch) {
	n := st.n
	// id
	switch a := rec.Column(p.id).(type) {
	case *array.String:
		// All-ASCII data (the norm) needs no per-value UTF-8 check.
		ascii := isASCII(a.ValueBytes())
		st.idCol, st.idsEmpty = a, true
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotID)
				continue
			}
			s := a.Value(i)
			if s == "" || len(s) > MaxIDBytes || (!ascii && !utf8.ValidString(s)) {
				st.fail(i, rInvalidID, slotID)
			}
		}
	default:
		g := stringGetter(a)
		for i := 0; i < n; i++ {
			s, ok := g(i)
			if !ok {
				st.fail(i, rMissing, slotID)
				continue
			}
			st.ids[i] = s
			if !validID(s) {
				st.fail(i, rInvalidID, slotID)
			}
		}
	}
	// time
	tcol := rec.Column(p.time)
	toFloats(tcol, st.times)
	for i, t := range st.times {
		if tcol.IsNull(i) {
			st.fail(i, rMissing, slotTime)
		} else if !(t >= 0) || t > math.MaxFloat64 {
			st.fail(i, rTime, slotTime)
		}
	}
	// event
	switch a := rec.Column(p.event).(type) {
	case *array.Boolean:
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotEvent)
				continue
			}
			st.events[i] = a.Value(i)
		}
	default:
		toFloats(a, st.tmp)
		for i, x := range st.tmp {
			switch {
			case a.IsNull(i):
				st.fail(i, rMissing, slotEvent)
			case x == 0:
				st.events[i] = false
			case x == 1:
				st.events[i] = true
			default:
				st.fail(i, rEvent, slotEvent)
			}
		}
	}
	// cohort
	v.fillCohort(rec.Column(p.cohort), st)
	// covariates
	for k, ci := range p.cov {
		col := rec.Column(ci)
		dst := st.covs[k]
		toFloats(col, dst)
		for i, x := range dst {
			if col.IsNull(i) || math.IsNaN(x) || math.IsInf(x, 0) {
				st.fail(i, rCov, slotCov0+k)
			}
		}
	}
	switch {
	case p.site >= 0:
		v.fillSite(rec.Column(p.site), st)
	case p.withSite: // nullable, absent
		for i := range n {
			st.nullSite(i)
		}
	}
	switch {
	case p.obs >= 0:
		fillObs(rec.Column(p.obs), st, v.spec.NullableObservedAt)
	case p.withObs: // nullable, absent
		for i := range n {
			st.nullObs(i)
		}
	}
}

// fillSite reads the site column. A dictionary keeps its entries where they
// are: each row records its index (st.siteIdx), and build makes a
// dictionary of the entries the good rows use, so that an entry is copied
// at most once however many rows point at it.
func (v *Validator) fillSite(col arrow.Array, st *scratch) {
	n := st.n
	nullable := v.spec.NullableSite
	missing := func(i int) {
		if nullable {
			st.nullSite(i)
		} else {
			st.fail(i, rMissing, slotSite)
		}
	}
	if a, ok := col.(*array.Dictionary); ok {
		dict := a.Dictionary()
		ig := arrowipc.IntGetter(a.Indices())
		st.siteDict = dict
		st.siteIdx = resize(st.siteIdx, n)
		for i := range n {
			j, _ := ig(i) // in range: arrowipc.CheckColumns checked every index
			st.siteIdx[i] = int32(j)
			if a.IsNull(i) || dict.IsNull(int(j)) {
				missing(i)
			}
		}
		return
	}
	g := stringGetter(col)
	for i := range n {
		s, ok := g(i)
		if !ok {
			missing(i)
			continue
		}
		st.sites[i] = s
	}
}

func (v *Validator) fillCohort(col arrow.Array, st *scratch) {
	n := st.n
	switch a := col.(type) {
	case *array.Dictionary:
		// Map each dictionary entry to a label code once: all of them
		// when the dictionary is no longer than the batch, else the
		// entries the rows use (a dictionary far longer than its batch
		// must not cost a pass over every entry).
		dict := a.Dictionary()
		g := stringGetter(dict)
		code := func(j int) int32 {
			if s, ok := g(j); ok {
				if c, found := v.labels[s]; found {
					return c
				}
			}
			return -1
		}
		if dict.Len() > 2*n+16 {
			byRow := sparseCodes(a, n, code)
			for i := 0; i < n; i++ {
				if a.IsNull(i) || dict.IsNull(a.GetValueIndex(i)) {
					st.fail(i, rMissing, slotCohort)
					continue
				}
				st.codes[i] = byRow[i]
				if byRow[i] < 0 {
					st.fail(i, rCohort, slotCohort)
				}
			}
			return
		}
		codes := make([]int32, dict.Len())
		for j := range codes {
			codes[j] = code(j)
		}
		if ix, ok := a.Indices().(*array.Int32); ok {
			raw := ix.Int32Values()
			for i := 0; i < n; i++ {
				if a.IsNull(i) || dict.IsNull(int(raw[i])) {
					st.fail(i, rMissing, slotCohort)
					continue
				}
				c := codes[raw[i]]
				st.codes[i] = c
				if c < 0 {
					st.fail(i, rCohort, slotCohort)
				}
			}
			return
		}
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			j := a.GetValueIndex(i)
			if dict.IsNull(j) {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			c := codes[j]
			st.codes[i] = c
			if c < 0 {
				st.fail(i, rCohort, slotCohort)
			}
		}
	case *array.String:
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			c, found := v.labels[a.Value(i)]
			if !found {
				st.fail(i, rCohort, slotCohort)
				continue
			}
			st.codes[i] = c
		}
	default:
		if isInt(a.DataType().ID()) {
			ig := arrowipc.IntGetter(a)
			for i := 0; i < n; i++ {
				if a.IsNull(i) {
					st.fail(i, rMissing, slotCohort)
					continue
				}
				x, exact := ig(i)
				c, found := v.intLabels[x]
				if !found || !exact {
					st.fail(i, rCohort, slotCohort)
					continue
				}
				st.codes[i] = c
			}
			return
		}
		g := stringGetter(a)
		for i := 0; i < n; i++ {
			s, ok := g(i)
			if !ok {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			c, found := v.labels[s]
			if !found {
				st.fail(i, rCohort, slotCohort)
				continue
			}
			st.codes[i] = c
		}
	}
}
