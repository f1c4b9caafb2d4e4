package schemas

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/bitutil"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// The validator's outputs: the canonical record of the good rows (input
// columns passed through when no row is dropped) and the dead letters.

// reuse marks canonical-typed input columns that can be passed through
// without a copy (only when every row is good).
type reuse struct {
	id, time, event, site, obs arrow.Array
	cov                        []arrow.Array
}

func (v *Validator) reusable(rec arrow.Record, p *plan, st *scratch) *reuse {
	for _, r := range st.reason {
		if r != rOK {
			return nil
		}
	}
	r := &reuse{cov: make([]arrow.Array, len(p.cov))}
	if a, ok := rec.Column(p.id).(*array.String); ok {
		r.id = a
	}
	if a, ok := rec.Column(p.time).(*array.Float64); ok {
		r.time = a
	}
	if a, ok := rec.Column(p.event).(*array.Boolean); ok {
		r.event = a
	}
	for k, ci := range p.cov {
		if a, ok := rec.Column(ci).(*array.Float64); ok {
			r.cov[k] = a
		}
	}
	if p.site >= 0 {
		if a, ok := rec.Column(p.site).(*array.String); ok {
			r.site = a
		}
	}
	if p.obs >= 0 {
		if a, ok := rec.Column(p.obs).(*array.Timestamp); ok && arrow.TypeEqual(a.DataType(), ObservedAtType) {
			r.obs = a
		}
	}
	return r
}

// empty returns a zero-row canonical record.
func (v *Validator) empty(site, obs bool) arrow.Record {
	st := &scratch{}
	st.reset(0, len(v.spec.Covariates), site, obs)
	return v.build(st, site, obs, nil)
}

// build assembles the canonical record from the good rows of st. Columns
// are written straight into Arrow buffers (no builders): a gather of the
// good rows, or the input array itself when every row is good and its type
// is already canonical.
func (v *Validator) build(st *scratch, site, obs bool, ru *reuse) arrow.Record {
	keep := st.keep[:0]
	for i, r := range st.reason {
		if r == rOK {
			keep = append(keep, int32(i))
		}
	}
	st.keep = keep
	k := len(keep)
	siteDict := site && st.siteDict != nil
	schema := v.schemas[schemaKeyDict(site, obs, siteDict)]
	cols := make([]arrow.Array, 0, schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	mem := v.mem
	// pass returns a retained input array usable as is, or nil.
	pass := func(get func(*reuse) arrow.Array) arrow.Array {
		if ru == nil || k != st.n {
			return nil
		}
		a := get(ru)
		if a != nil {
			a.Retain()
		}
		return a
	}
	or := func(a arrow.Array, build func() arrow.Array) arrow.Array {
		if a != nil {
			return a
		}
		return build()
	}
	cols = append(cols,
		or(pass(func(r *reuse) arrow.Array { return r.id }), func() arrow.Array { return gatherStrings(mem, st.idStrings(), keep) }),
		or(pass(func(r *reuse) arrow.Array { return r.time }), func() arrow.Array {
			return gatherFixed(mem, arrow.PrimitiveTypes.Float64, st.times, keep)
		}),
		or(pass(func(r *reuse) arrow.Array { return r.event }), func() arrow.Array { return gatherBools(mem, st.events, keep) }),
		v.buildCohort(st.codes, keep),
	)
	for c := range st.covs {
		cols = append(cols, or(pass(func(r *reuse) arrow.Array { return r.cov[c] }), func() arrow.Array {
			return gatherFixed(mem, arrow.PrimitiveTypes.Float64, st.covs[c], keep)
		}))
	}
	if site {
		cols = append(cols, or(pass(func(r *reuse) arrow.Array { return r.site }), func() arrow.Array {
			if siteDict {
				return gatherDict(mem, st.siteDict, st.siteIdx, nullsOf(st.anySiteNull, st.siteNull), keep)
			}
			return withNulls(mem, gatherStrings(mem, st.sites, keep), nullsOf(st.anySiteNull, st.siteNull), keep)
		}))
	}
	if obs {
		cols = append(cols, or(pass(func(r *reuse) arrow.Array { return r.obs }), func() arrow.Array {
			return withNulls(mem, gatherFixed(mem, ObservedAtType, st.obs, keep), nullsOf(st.anyObsNull, st.obsNull), keep)
		}))
	}
	return array.NewRecord(schema, cols, int64(k))
}

// newBuffer allocates an n-byte buffer from mem.
func newBuffer(mem memory.Allocator, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(n)
	return b
}

// makeArray wraps buffers (consumed) into an array of type dt and length n.
func makeArray(dt arrow.DataType, n int, bufs ...*memory.Buffer) arrow.Array {
	data := array.NewData(dt, n, bufs, nil, 0, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer data.Release()
	return array.MakeFromData(data)
}

// gatherFixed copies src[keep] into a new non-null array of a fixed-width
// type whose Go representation is T (float64, int32, int64 timestamps).
func gatherFixed[T float64 | int32 | int64](mem memory.Allocator, dt arrow.DataType, src []T, keep []int32) arrow.Array {
	size := int(unsafe.Sizeof(T(0)))
	buf := newBuffer(mem, size*len(keep))
	if len(keep) > 0 {
		dst := unsafe.Slice((*T)(unsafe.Pointer(&buf.Bytes()[0])), len(keep))
		if len(keep) == len(src) {
			copy(dst, src)
		} else {
			for j, i := range keep {
				dst[j] = src[i]
			}
		}
	}
	return makeArray(dt, len(keep), nil, buf)
}

func gatherBools(mem memory.Allocator, src []bool, keep []int32) arrow.Array {
	buf := newBuffer(mem, int(bitutil.BytesForBits(int64(len(keep)))))
	bits := buf.Bytes()
	clear(bits)
	for j, i := range keep {
		if src[i] {
			bitutil.SetBit(bits, j)
		}
	}
	return makeArray(arrow.FixedWidthTypes.Boolean, len(keep), nil, buf)
}

func gatherStrings(mem memory.Allocator, src []string, keep []int32) arrow.Array {
	total := 0
	for _, i := range keep {
		total += len(src[i])
	}
	if total > math.MaxInt32 {
		panic("schemas: string column exceeds 2 GiB") // recovered by validate
	}
	offBuf := newBuffer(mem, 4*(len(keep)+1))
	dataBuf := newBuffer(mem, total)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	data := dataBuf.Bytes()
	pos := 0
	offs[0] = 0
	for j, i := range keep {
		pos += copy(data[pos:], src[i])
		offs[j+1] = int32(pos)
	}
	return makeArray(arrow.BinaryTypes.String, len(keep), nil, offBuf, dataBuf)
}

func (v *Validator) buildCohort(codes []int32, keep []int32) arrow.Array {
	idx := gatherFixed(v.mem, arrow.PrimitiveTypes.Int32, codes, keep)
	defer idx.Release()
	dict := cohortDictionary(v.mem, v.spec.Cohorts)
	defer dict.Release()
	return array.NewDictionaryArray(CohortType, idx, dict)
}

func cohortDictionary(mem memory.Allocator, labels []string) arrow.Array {
	keep := make([]int32, len(labels))
	for i := range keep {
		keep[i] = int32(i)
	}
	return gatherStrings(mem, labels, keep)
}

// deadLetters builds one dead letter per failed row, the rows beyond the
// verbatim cap (SetMaxDeadRows) folded into one summary per reason.
func (v *Validator) deadLetters(st *scratch, rowBase int, names []string, row func(int) map[string]any) []DeadLetter {
	var dead []DeadLetter
	var sums [len(reasonNames)]int // reason -> 1 + index in dead
	for i, r := range st.reason {
		if r == rOK {
			continue
		}
		if v.maxDead > 0 && len(dead) >= v.maxDead {
			if j := sums[r]; j > 0 {
				dead[j-1].Count++
				continue
			}
			dead = append(dead, DeadLetter{Reason: reasonNames[r], RowIndex: rowBase + i, Count: 1})
			sums[r] = len(dead)
			continue
		}
		m := row(i)
		slot := int(st.slot[i])
		name := ""
		if slot < len(names) {
			name = names[slot]
		}
		dead = append(dead, DeadLetter{
			Reason:   reasonNames[r],
			Detail:   detail(r, name, m, int(st.dupOf[i])),
			RowIndex: rowBase + i,
			Row:      m,
		})
	}
	for _, j := range sums {
		if j > 0 {
			d := &dead[j-1]
			d.Detail = summaryDetail(d.Reason, d.Count, d.RowIndex, v.maxDead)
		}
	}
	return dead
}

func detail(r uint8, name string, row map[string]any, dupOf int) string {
	val, present := row[name]
	q := func() string {
		if !present {
			return "absent"
		}
		return fmt.Sprintf("%#v", jsonSafe(val))
	}
	switch r {
	case rMissing:
		return fmt.Sprintf("field %q is null or absent", name)
	case rInvalidID:
		return fmt.Sprintf("field %q must be a non-empty UTF-8 string or an integer, got %s", name, q())
	case rDup:
		return fmt.Sprintf("field %q: id %s already appeared in row %d", name, q(), dupOf)
	case rTime:
		return fmt.Sprintf("field %q must be a finite number >= 0, got %s", name, q())
	case rEvent:
		return fmt.Sprintf("field %q must be 0, 1, true or false, got %s", name, q())
	case rCohort:
		return fmt.Sprintf("field %q: label %s is not in the configured cohort list", name, q())
	case rCov:
		return fmt.Sprintf("covariate %q must be a finite number, got %s", name, q())
	case rObs:
		return fmt.Sprintf("field %q must be a timestamp, a date or an RFC 3339 string, got %s", name, q())
	}
	return fmt.Sprintf("field %q: %s", name, reasonNames[r])
}
