package schemas

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/codecs/jsonrec"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// DecodeJSON decodes one message value holding JSON lines (one object per
// line; blank lines are skipped) or a JSON array of objects, keyed by the
// input column names, and validates it. Each row is read strictly (RFC
// 8259, codecs/jsonrec): a JSON number or a string holding exactly one for
// time and covariates; true, false, 0, 1, "0" or "1" for event; a label
// string (or an integer literal matching a label) for cohort; a valid
// Unicode string or an integer literal for id; an RFC 3339 string for
// observed_at. Only the configured keys are kept. site and observed_at are
// columns of the output when any object has them (or the Spec requires
// them or makes them nullable), never when the Spec skips them.
//
// A line that is not valid JSON is a dead letter "undecodable" carrying the
// line in Raw; an element that is not an object, or an object with a key
// twice, is "wrong_schema". When no line decodes at all, the array itself
// is malformed, or the decoded rows would pass the decode bound, the
// message gives one undecodable dead letter with RowIndex -1, the raw bytes
// and the number of rows (lines or elements) as its Count.
func (v *Validator) DecodeJSON(data []byte) (out arrow.Record, dead []DeadLetter) {
	return v.decodeJSON(data, 0, nil, true)
}

func (v *Validator) decodeJSON(data []byte, rowBase int, set *idSet, wholeOnFail bool) (out arrow.Record, dead []DeadLetter) {
	rows := 0 // the rows the message holds, once known
	whole := func(detail string) (arrow.Record, []DeadLetter) {
		return v.empty(false, false), []DeadLetter{{Reason: ReasonUndecodable, RowIndex: -1, Detail: detail,
			Raw: append([]byte(nil), data...), Count: rows}}
	}
	defer func() {
		if p := recover(); p != nil {
			if out != nil {
				out.Release()
			}
			out, dead = whole(fmt.Sprintf("json: message could not be decoded: %v", p))
		}
	}()
	// One copy of the message as text: every value is a substring of it.
	body := strings.TrimSpace(strings.TrimPrefix(string(data), string(utf8BOM)))
	if len(body) == 0 {
		if !wholeOnFail {
			return v.empty(false, false), nil
		}
		return whole("json: empty message")
	}
	var elems []string
	if body[0] == '[' {
		var err error
		if elems, err = jsonrec.SplitArray(body); err != nil {
			return whole("json: " + err.Error())
		}
	} else {
		for len(body) > 0 {
			line := body
			if k := strings.IndexByte(body, '\n'); k >= 0 {
				line, body = body[:k], body[k+1:]
			} else {
				body = ""
			}
			if line = strings.TrimSpace(line); line != "" {
				elems = append(elems, line)
			}
		}
	}
	rows = len(elems)
	// Decoding counts against the decode bound, as an Arrow message's
	// buffers do (input.max_decoded_bytes; at most 1 MiB + 256 x the
	// message size): the text, and a slot of each configured key a row.
	if bound, cost := arrowipc.DecodeBound(v.maxDecode, len(data)), v.jsonCost(len(data), len(elems)); cost > bound {
		return whole(fmt.Sprintf("json: %d rows take about %d bytes decoded, over the decode bound of %d (input.max_decoded_bytes)", len(elems), cost, bound))
	}
	b, decoded := v.parseJSONRows(elems)
	if decoded == 0 && len(elems) > 0 && wholeOnFail {
		return whole("json: no line is a JSON value")
	}
	return v.validateJSON(b, rowBase, set)
}

// jsonCost is about the memory reading a JSON message of size bytes and
// rows rows takes: its text, the configured values of every row, and the
// validation scratch.
func (v *Validator) jsonCost(size, rows int) int64 {
	ns := int64(slotCov0 + len(v.spec.Covariates))
	return int64(size) + int64(rows)*(16+ns*int64(unsafe.Sizeof(jsonrec.Value{}))+160)
}

// jsonBatch is a message's rows as slots: row i's configured values are
// vals[i*ns : (i+1)*ns] (slot order: id, time, event, cohort, site,
// observed_at, covariates).
type jsonBatch struct {
	elems   []string
	ns      int
	vals    []jsonrec.Value
	rowErr  map[int]rowFailure
	present []bool // per slot: any row has the key
}

// parseJSONRows reads each element as a row object (jsonrec.ParseSlots), keeping
// the values of the configured keys only. It returns the batch and the
// number of elements that were valid JSON.
func (v *Validator) parseJSONRows(elems []string) (*jsonBatch, int) {
	ns := slotCov0 + len(v.spec.Covariates)
	b := &jsonBatch{elems: elems, ns: ns, vals: make([]jsonrec.Value, ns*len(elems)), rowErr: map[int]rowFailure{}, present: make([]bool, ns)}
	slots := make(map[string]int, ns)
	for k, name := range v.slotNames() {
		slots[name] = k
	}
	if v.spec.SkipSite {
		delete(slots, v.cols.Site)
	}
	if v.spec.SkipObservedAt {
		delete(slots, v.cols.ObservedAt)
	}
	slotOf := func(key string) int {
		if k, ok := slots[key]; ok {
			return k
		}
		return -1
	}
	seen := map[string]struct{}{}
	decoded := 0
	for i, e := range elems {
		vals := b.vals[i*ns : (i+1)*ns]
		err := jsonrec.ParseSlots(e, slotOf, vals, seen)
		var dup jsonrec.DupKeyError
		var notObj jsonrec.NotObjectError
		switch {
		case err == nil:
		case errors.As(err, &dup), errors.As(err, &notObj):
			decoded++
			clear(vals)
			b.rowErr[i] = rowFailure{reason: rWrongSchema, detail: "json: " + err.Error(), raw: []byte(e)}
			continue
		default:
			clear(vals)
			b.rowErr[i] = rowFailure{reason: rUndecodable, detail: "json: " + err.Error(), raw: []byte(e)}
			continue
		}
		decoded++
		for k, x := range vals {
			if x.Kind != jsonrec.Absent {
				b.present[k] = true
			}
		}
	}
	return b, decoded
}

// deadRow renders row i of a JSON batch for its dead letter: read again
// with every key, the configured ones up to MaxDeadFieldBytes, the others
// cut to MaxDeadValueBytes.
func (v *Validator) deadRow(b *jsonBatch, i int) map[string]any {
	lim := func(k string) int {
		if v.configured(k) {
			return MaxDeadFieldBytes
		}
		return MaxDeadValueBytes
	}
	row, _, err := jsonrec.ParseObject(b.elems[i], func(string) bool { return true }, lim, map[string]struct{}{})
	if err != nil {
		return nil
	}
	return row
}

// validateJSON validates a JSON batch with the same rules as Validate, the
// values read as docs/producers.md states them for JSON.
func (v *Validator) validateJSON(b *jsonBatch, rowBase int, set *idSet) (arrow.Record, []DeadLetter) {
	return v.validateRows(len(b.elems), b.rowErr, b.present[slotSite], b.present[slotObs], rowBase, set,
		func(i int, st *scratch, withSite, withObs bool) {
			v.fillJSONRow(b.vals[i*b.ns:(i+1)*b.ns], i, st, withSite, withObs)
		},
		func(i int) map[string]any { return v.deadRow(b, i) })
}

func (v *Validator) fillJSONRow(vals []jsonrec.Value, i int, st *scratch, withSite, withObs bool) {
	null := func(x jsonrec.Value) bool { return x.Kind == jsonrec.Absent || x.Kind == jsonrec.Null }
	if x := vals[slotID]; null(x) {
		st.fail(i, rMissing, slotID)
	} else {
		s, ok := jsonID(x)
		st.ids[i] = s
		if !ok || !validID(s) {
			st.fail(i, rInvalidID, slotID)
		}
	}
	if x := vals[slotTime]; null(x) {
		st.fail(i, rMissing, slotTime)
	} else if t, ok := jsonFloat(x); !ok || !(t >= 0) || t > math.MaxFloat64 {
		st.fail(i, rTime, slotTime)
	} else {
		st.times[i] = t
	}
	if x := vals[slotEvent]; null(x) {
		st.fail(i, rMissing, slotEvent)
	} else if e, ok := jsonEvent(x); !ok {
		st.fail(i, rEvent, slotEvent)
	} else {
		st.events[i] = e
	}
	if x := vals[slotCohort]; null(x) {
		st.fail(i, rMissing, slotCohort)
	} else if c, ok := v.jsonCohort(x); !ok {
		st.fail(i, rCohort, slotCohort)
	} else {
		st.codes[i] = c
	}
	for k := range v.spec.Covariates {
		x := vals[slotCov0+k]
		f, ok := jsonFloat(x)
		if null(x) || !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			st.fail(i, rCov, slotCov0+k)
			continue
		}
		st.covs[k][i] = f
	}
	if withSite {
		switch x := vals[slotSite]; {
		case null(x) && v.spec.NullableSite:
			st.nullSite(i)
		case null(x):
			st.fail(i, rMissing, slotSite)
		default:
			st.sites[i] = jsonText(x)
		}
	}
	if withObs {
		x := vals[slotObs]
		switch {
		case null(x) && v.spec.NullableObservedAt:
			st.nullObs(i)
		case null(x):
			st.fail(i, rMissing, slotObs)
		case x.Kind != jsonrec.String:
			st.fail(i, rObs, slotObs)
		default:
			if us, ok := parseTimestamp(x.S); ok {
				st.obs[i] = us
			} else {
				st.fail(i, rObs, slotObs)
			}
		}
	}
}

// jsonFloat parses a time or covariate value: a JSON number, or a string
// holding exactly one JSON number literal.
func jsonFloat(x jsonrec.Value) (float64, bool) {
	switch {
	case x.Kind == jsonrec.Number, x.Kind == jsonrec.String && jsonrec.IsNumber(x.S):
		f, err := strconv.ParseFloat(x.S, 64)
		return f, err == nil
	}
	return 0, false
}

// jsonEvent accepts true/false, the numbers 0 and 1 and the strings "0"
// and "1", as docs/producers.md states.
func jsonEvent(x jsonrec.Value) (bool, bool) {
	switch x.Kind {
	case jsonrec.True:
		return true, true
	case jsonrec.False:
		return false, true
	case jsonrec.Number, jsonrec.String:
		switch x.S {
		case "0":
			return false, true
		case "1":
			return true, true
		}
	}
	return false, false
}

// jsonID: a string (valid Unicode text) as it is, an integer literal as
// its decimal text.
func jsonID(x jsonrec.Value) (string, bool) {
	switch x.Kind {
	case jsonrec.String:
		return x.S, true
	case jsonrec.Number:
		if !jsonrec.IsInteger(x.S) {
			return "", false
		}
		if n, err := strconv.ParseInt(x.S, 10, 64); err == nil {
			return strconv.FormatInt(n, 10), true
		}
		if n, err := strconv.ParseUint(x.S, 10, 64); err == nil {
			return strconv.FormatUint(n, 10), true
		}
	}
	return "", false
}

// jsonCohort matches a label exactly: a string, or an integer literal by
// its decimal text.
func (v *Validator) jsonCohort(x jsonrec.Value) (int32, bool) {
	switch x.Kind {
	case jsonrec.String:
		c, ok := v.labels[x.S]
		return c, ok
	case jsonrec.Number:
		if !jsonrec.IsInteger(x.S) {
			return 0, false
		}
		if c, ok := v.labels[x.S]; ok {
			return c, true
		}
		if n, err := strconv.ParseInt(x.S, 10, 64); err == nil {
			c, ok := v.intLabels[n]
			return c, ok
		}
	}
	return 0, false
}

// jsonText is a site value's text.
func jsonText(x jsonrec.Value) string {
	switch x.Kind {
	case jsonrec.True:
		return "true"
	case jsonrec.False:
		return "false"
	}
	return x.S
}
