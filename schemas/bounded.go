package schemas

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/bitutil"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/jsonrec"
)

// Memory bounded by the bytes on the wire (issue 21): the helpers that keep
// a dictionary's entries referenced rather than copied per row, the
// dead-letter row rendering that carries the configured fields and a
// bounded prefix of anything else, and the cost a message's dictionaries
// count against the decode bound.

// MaxDeadValueBytes is the longest value of a column outside the
// configuration that a dead letter carries: a longer one is cut to a
// prefix of this many bytes and marked with its full length.
const MaxDeadValueBytes = 256

// MaxDeadFieldBytes bounds a configured field's text in a dead letter
// (an id is valid up to MaxIDBytes; anything longer is cut and marked).
const MaxDeadFieldBytes = MaxIDBytes + 1

// rowMap renders row i of rec for a dead letter: the configured columns
// (id, time, event, cohort, covariates, and site and observed_at unless the
// spec skips them) in full up to MaxDeadFieldBytes, every other column
// bounded (MaxDeadValueBytes of a string; nested values as their type). A
// dead letter therefore costs about its configured fields, whatever else
// the row holds.
func (v *Validator) rowMap(rec arrow.Record, i int) map[string]any {
	s := rec.Schema()
	m := make(map[string]any, s.NumFields())
	for c := 0; c < s.NumFields(); c++ {
		name := s.Field(c).Name
		limit := MaxDeadValueBytes
		if v.configured(name) {
			limit = MaxDeadFieldBytes
		}
		m[name] = boundedCell(rec.Column(c), i, limit)
	}
	return m
}

// configured reports whether an input column is one the configuration reads.
func (v *Validator) configured(name string) bool {
	switch name {
	case v.cols.ID, v.cols.Time, v.cols.Event, v.cols.Cohort:
		return true
	case v.cols.Site:
		return !v.spec.SkipSite
	case v.cols.ObservedAt:
		return !v.spec.SkipObservedAt
	}
	for _, c := range v.spec.Covariates {
		if c == name {
			return true
		}
	}
	return false
}

// boundedCell is cellValue with strings and byte strings cut to limit
// bytes, and nested values (lists, structs, maps) shown as their type only.
func boundedCell(arr arrow.Array, i, limit int) any {
	return guardedCell(arr, i, func() any { return readBoundedCell(arr, i, limit) })
}

// readBoundedCell is boundedCell of a non-null cell in range.
func readBoundedCell(arr arrow.Array, i, limit int) any {
	switch a := arr.(type) {
	case *array.String:
		return jsonrec.CutString(a.Value(i), limit)
	case *array.LargeString:
		return jsonrec.CutString(a.Value(i), limit)
	case *array.Binary:
		b := a.Value(i)
		if len(b) > limit {
			return jsonrec.CutString(string(b[:limit]), limit) + fmt.Sprintf("… (%d bytes, cut)", len(b))
		}
		return append([]byte(nil), b...)
	case *array.LargeBinary:
		b := a.Value(i)
		if len(b) > limit {
			return fmt.Sprintf("<%d bytes, cut>", len(b))
		}
		return append([]byte(nil), b...)
	case *array.Dictionary:
		return boundedCell(a.Dictionary(), a.GetValueIndex(i), limit)
	}
	if arrow.IsNested(arr.DataType().ID()) {
		return fmt.Sprintf("<%s value not shown>", arr.DataType())
	}
	return readCell(arr, i)
}

// sparseCodes maps the cohort of each row (-1: no label) for a dictionary
// longer than its batch: only the entries the rows use are looked up.
func sparseCodes(a *array.Dictionary, n int, code func(int) int32) []int32 {
	byIdx := make(map[int]int32, min(n, 1<<16))
	rows := make([]int32, n)
	for i := range n {
		if a.IsNull(i) {
			continue
		}
		j := a.GetValueIndex(i)
		c, ok := byIdx[j]
		if !ok {
			c = code(j)
			byIdx[j] = c
		}
		rows[i] = c
	}
	return rows
}

// nullsOf is the null flags of a nullable column, or nil when none is set.
func nullsOf(any bool, nulls []bool) []bool {
	if !any {
		return nil
	}
	return nulls
}

// withNulls adds a validity bitmap to a (non-null) array built from the
// rows keep: row keep[j] is null where nulls says so. nil nulls returns
// the array as is.
func withNulls(mem memory.Allocator, a arrow.Array, nulls []bool, keep []int32) arrow.Array {
	if nulls == nil {
		return a
	}
	defer a.Release()
	bm := newBuffer(mem, int(bitutil.BytesForBits(int64(len(keep)))))
	bits := bm.Bytes()
	clear(bits)
	nn := 0
	for j, i := range keep {
		if nulls[i] {
			nn++
		} else {
			bitutil.SetBit(bits, j)
		}
	}
	d := a.Data()
	bufs := append([]*memory.Buffer{bm}, d.Buffers()[1:]...)
	nd := array.NewData(d.DataType(), d.Len(), bufs, d.Children(), nn, 0)
	bm.Release()
	defer nd.Release()
	return array.MakeFromData(nd)
}

// gatherDict builds the site column of the rows keep as a dictionary: the
// entries they use, each converted to utf8 once, in the order first used;
// the indices remapped. A null row (nulls) gets a null index.
func gatherDict(mem memory.Allocator, dict arrow.Array, idx []int32, nulls []bool, keep []int32) arrow.Array {
	g := stringGetter(dict)
	remap := make(map[int32]int32, min(len(keep), 1024))
	var entries []string
	ix := make([]int32, len(keep))
	for j, i := range keep {
		if nulls != nil && nulls[i] {
			continue
		}
		k, ok := remap[idx[i]]
		if !ok {
			s, _ := g(int(idx[i]))
			k = int32(len(entries))
			entries = append(entries, s)
			remap[idx[i]] = k
		}
		ix[j] = k
	}
	all := make([]int32, len(entries))
	for k := range all {
		all[k] = int32(k)
	}
	values := gatherStrings(mem, entries, all)
	defer values.Release()
	indices := withNulls(mem, gatherFixed(mem, arrow.PrimitiveTypes.Int32, ix, identity(len(ix))), nulls, keep)
	defer indices.Release()
	return array.NewDictionaryArray(SiteDictType, indices, values)
}

func identity(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}
