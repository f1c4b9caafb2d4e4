package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/codecs/jsonrec"
)

// rawBatch is a batch of untyped rows (CSV cells or decoded JSON objects).
// Every cell is parsed leniently, so that a bad cell fails its row only.
type rawBatch struct {
	rows []map[string]any // nil entry: the row failed to decode (see rowErr)
	// rowErr holds whole-row failures (undecodable line, not an object).
	rowErr map[int]rowFailure
	// present reports whether a column exists in this batch (CSV header, or
	// any JSON object having the key).
	present func(col string) bool
	// nullish maps CSV conventions ("" and NA) to null; JSON keeps "" as a
	// string.
	nullish func(string) bool
}

type rowFailure struct {
	reason uint8
	detail string
	raw    []byte
	row    map[string]any
}

// withRowFailures gives the dead letters of rows that failed before
// validation (rowErr, by row index within the batch; rowBase is the
// batch's first row) the detail, raw bytes and row their failure recorded.
func withRowFailures(dead []DeadLetter, rowErr map[int]rowFailure, rowBase int) {
	for k := range dead {
		if f, bad := rowErr[dead[k].RowIndex-rowBase]; bad {
			dead[k].Detail = f.detail
			dead[k].Raw = f.raw
			dead[k].Row = f.row
		}
	}
}

func csvNull(s string) bool {
	t := strings.TrimSpace(s)
	return t == "" || t == "NA"
}

// cell returns the value of a column in row i, nil if absent or null.
func (b *rawBatch) cell(i int, col string) any {
	x, ok := b.rows[i][col]
	if !ok || x == nil {
		return nil
	}
	if s, isStr := x.(string); isStr && b.nullish != nil && b.nullish(s) {
		return nil
	}
	return x
}

// validateRaw validates a raw batch with the same rules as Validate.
func (v *Validator) validateRaw(b *rawBatch, rowBase int, set *idSet) (arrow.Record, []DeadLetter) {
	return v.validateRows(len(b.rows), b.rowErr, b.present(v.cols.Site), b.present(v.cols.ObservedAt), rowBase, set,
		func(i int, st *scratch, withSite, withObs bool) { v.fillRawRow(b, i, st, withSite, withObs) },
		func(i int) map[string]any { return b.rows[i] })
}

// validateRows is the validation of the row formats (raw rows, JSON): n
// rows, of which those in rowErr failed whole (undecodable, not an
// object) and the others are checked by fill into the scratch; the
// optional columns (site, observed_at) are in the output when a row has
// them or the spec requires them or allows them null (a required column
// that no row has fails every row, missing_field, instead of giving a
// batch without it). row is a row's cells for its dead letter.
func (v *Validator) validateRows(n int, rowErr map[int]rowFailure, sitePresent, obsPresent bool, rowBase int, set *idSet,
	fill func(i int, st *scratch, withSite, withObs bool), row func(int) map[string]any) (arrow.Record, []DeadLetter) {
	withSite := !v.spec.SkipSite && (sitePresent || v.spec.RequireSite || v.spec.NullableSite)
	withObs := !v.spec.SkipObservedAt && (obsPresent || v.spec.RequireObservedAt || v.spec.NullableObservedAt)
	st := v.pool.Get().(*scratch)
	defer func() { st.release(); v.pool.Put(st) }()
	st.reset(n, len(v.spec.Covariates), withSite, withObs)
	for i := 0; i < n; i++ {
		if f, bad := rowErr[i]; bad {
			st.fail(i, f.reason, 0)
			continue
		}
		fill(i, st, withSite, withObs)
	}
	st.dedupe(set, rowBase)
	out := v.build(st, withSite, withObs, nil)
	dead := v.deadLetters(st, rowBase, v.slotNames(), row)
	withRowFailures(dead, rowErr, rowBase)
	return out, dead
}

func (v *Validator) fillRawRow(b *rawBatch, i int, st *scratch, withSite, withObs bool) {
	// id
	switch x := b.cell(i, v.cols.ID).(type) {
	case nil:
		st.fail(i, rMissing, slotID)
	default:
		s, ok := rawIDString(x)
		st.ids[i] = s
		if !ok || !validID(s) {
			st.fail(i, rInvalidID, slotID)
		}
	}
	// time
	if x := b.cell(i, v.cols.Time); x == nil {
		st.fail(i, rMissing, slotTime)
	} else if t, ok := rawFloat(x); !ok || !(t >= 0) || t > math.MaxFloat64 {
		st.fail(i, rTime, slotTime)
	} else {
		st.times[i] = t
	}
	// event
	if x := b.cell(i, v.cols.Event); x == nil {
		st.fail(i, rMissing, slotEvent)
	} else if e, ok := rawEvent(x); !ok {
		st.fail(i, rEvent, slotEvent)
	} else {
		st.events[i] = e
	}
	// cohort
	if x := b.cell(i, v.cols.Cohort); x == nil {
		st.fail(i, rMissing, slotCohort)
	} else if c, ok := v.rawCohort(x); !ok {
		st.fail(i, rCohort, slotCohort)
	} else {
		st.codes[i] = c
	}
	for k, name := range v.spec.Covariates {
		x := b.cell(i, name)
		f, ok := rawFloat(x)
		if x == nil || !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			st.fail(i, rCov, slotCov0+k)
			continue
		}
		st.covs[k][i] = f
	}
	if withSite {
		switch x := b.cell(i, v.cols.Site); {
		case x == nil && v.spec.NullableSite:
			st.nullSite(i)
		case x == nil:
			st.fail(i, rMissing, slotSite)
		default:
			st.sites[i] = rawText(x)
		}
	}
	if withObs {
		x := b.cell(i, v.cols.ObservedAt)
		if x == nil && v.spec.NullableObservedAt {
			st.nullObs(i)
		} else if x == nil {
			st.fail(i, rMissing, slotObs)
		} else if s, isStr := x.(string); !isStr {
			st.fail(i, rObs, slotObs)
		} else if us, ok := parseTimestamp(s); !ok {
			st.fail(i, rObs, slotObs)
		} else {
			st.obs[i] = us
		}
	}
}

// rawIDString: strings as they are; integer numbers as decimal.
func rawIDString(x any) (string, bool) {
	switch y := x.(type) {
	case string:
		return y, true
	case json.Number:
		if n, err := strconv.ParseInt(string(y), 10, 64); err == nil {
			return strconv.FormatInt(n, 10), true
		}
		if n, err := strconv.ParseUint(string(y), 10, 64); err == nil {
			return strconv.FormatUint(n, 10), true
		}
		return "", false
	case float64:
		if y == math.Trunc(y) && math.Abs(y) < 1<<53 {
			return strconv.FormatInt(int64(y), 10), true
		}
	}
	return "", false
}

// rawFloat parses numbers and numeric strings (surrounding spaces allowed).
func rawFloat(x any) (float64, bool) {
	switch y := x.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(y), 64)
		return f, err == nil
	case float64:
		return y, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(y), 64)
		return f, err == nil
	}
	return 0, false
}

// rawEvent accepts booleans, 0/1 (numbers or strings, 0.0 and 1.0 too) and
// the strings strconv.ParseBool accepts.
func rawEvent(x any) (bool, bool) {
	if b, ok := x.(bool); ok {
		return b, true
	}
	if f, ok := rawFloat(x); ok {
		switch f {
		case 0:
			return false, true
		case 1:
			return true, true
		}
		return false, false
	}
	if s, ok := x.(string); ok {
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return b, true
		}
	}
	return false, false
}

// rawCohort matches a label exactly; numbers match by their decimal text.
func (v *Validator) rawCohort(x any) (int32, bool) {
	switch y := x.(type) {
	case string:
		c, ok := v.labels[y]
		return c, ok
	case json.Number:
		if c, ok := v.labels[string(y)]; ok {
			return c, true
		}
		if f, err := strconv.ParseFloat(string(y), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			c, ok := v.intLabels[int64(f)]
			return c, ok
		}
	case float64:
		if y == math.Trunc(y) && math.Abs(y) < 1<<53 {
			c, ok := v.intLabels[int64(y)]
			return c, ok
		}
	}
	return 0, false
}

func rawText(x any) string {
	switch y := x.(type) {
	case string:
		return y
	case json.Number:
		return string(y)
	case jsonrec.BadText:
		return y.S
	case jsonrec.RawJSON:
		return string(y)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}
