package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// DecodeJSON decodes one message value holding JSON lines (one object per
// line; blank lines are skipped) or a JSON array of objects, keyed by the
// input column names, and validates it. Values are read leniently: numbers
// or numeric strings for time and covariates; true/false, 0/1 or "0"/"1"
// for event; a label string (or an integer matching a label) for cohort; a
// string or integer for id; an RFC 3339 string for observed_at. site and
// observed_at are columns of the output when any object has them.
//
// A line that is not valid JSON is a dead letter "undecodable" carrying the
// line in Raw; an element that is not an object is "wrong_schema". When no
// line decodes at all, or the array itself is malformed, the message gives
// one undecodable dead letter with RowIndex -1 and the raw bytes.
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
	body := bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))
	if len(body) == 0 {
		if !wholeOnFail {
			return v.empty(false, false), nil
		}
		return whole("json: empty message")
	}
	var elems [][]byte
	if body[0] == '[' {
		var err error
		if elems, err = splitArray(body); err != nil {
			return whole("json: " + err.Error())
		}
	} else {
		for _, line := range bytes.Split(body, []byte{'\n'}) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			elems = append(elems, line)
		}
	}
	rows = len(elems)
	b, decoded, cost := v.parseJSONRows(elems)
	if decoded == 0 && len(elems) > 0 && wholeOnFail {
		return whole("json: no line is a JSON value")
	}
	// Decoding counts against the decode bound, as an Arrow message's
	// buffers do (input.max_decoded_bytes; at most 1 MiB + 256 x the
	// message size).
	if bound := decodeBound(v.maxDecode, len(data)); int64(cost) > bound {
		return whole(fmt.Sprintf("json: the decoded rows take about %d bytes, over the decode bound of %d (input.max_decoded_bytes)", cost, bound))
	}
	return v.validateRaw(b, rowBase, set)
}

// parseJSONRows reads each element as a row object (jsonparse.go), keeping
// the configured keys only. It returns the batch, the number of elements
// that were valid JSON, and about the memory the kept values take.
func (v *Validator) parseJSONRows(elems [][]byte) (*rawBatch, int, int) {
	b := &rawBatch{rows: make([]map[string]any, len(elems)), rowErr: map[int]rowFailure{}, strictJSON: true}
	keys := map[string]bool{}
	seen := map[string]struct{}{}
	decoded, cost := 0, 24*len(elems)
	keep := v.configured
	limit := func(string) int { return MaxDeadFieldBytes }
	for i, e := range elems {
		row, c, err := parseObject(e, keep, limit, seen)
		var dup errDupKey
		var notObj errNotObject
		switch {
		case err == nil:
		case errors.As(err, &dup):
			decoded++
			b.rowErr[i] = rowFailure{reason: rWrongSchema, detail: "json: " + err.Error(), raw: boundedRaw(e)}
			continue
		case errors.As(err, &notObj):
			decoded++
			b.rowErr[i] = rowFailure{reason: rWrongSchema, detail: "json: " + err.Error(), raw: boundedRaw(e)}
			continue
		default:
			b.rowErr[i] = rowFailure{reason: rUndecodable, detail: "json: " + err.Error(), raw: boundedRaw(e)}
			continue
		}
		decoded++
		cost += c
		b.rows[i] = row
		for k := range row {
			keys[k] = true
		}
	}
	b.present = func(col string) bool { return keys[col] }
	// A dead-lettered row is read again with every key: the configured
	// ones whole, the others cut (MaxDeadValueBytes).
	b.deadRow = func(i int) map[string]any {
		lim := func(k string) int {
			if v.configured(k) {
				return MaxDeadFieldBytes
			}
			return MaxDeadValueBytes
		}
		row, _, err := parseObject(elems[i], func(string) bool { return true }, lim, map[string]struct{}{})
		if err != nil {
			return b.rows[i]
		}
		return row
	}
	return b, decoded, cost
}

// boundedRaw is a copy of a failed row's bytes for its dead letter (the
// pipeline bounds a dead letter's size again when it writes it).
func boundedRaw(e []byte) []byte { return append([]byte(nil), e...) }

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string, badText:
		return "a string"
	case rawJSON:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
