package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

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
	whole := func(detail string) (arrow.Record, []DeadLetter) {
		return v.empty(false, false), []DeadLetter{{Reason: ReasonUndecodable, RowIndex: -1, Detail: detail,
			Raw: append([]byte(nil), data...)}}
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
		var arr []json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&arr); err != nil {
			return whole("json: " + err.Error())
		}
		if _, err := dec.Token(); err != io.EOF {
			return whole("json: trailing data after the array")
		}
		for _, e := range arr {
			elems = append(elems, e)
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
	b, decoded := parseJSONRows(elems)
	if decoded == 0 && len(elems) > 0 && wholeOnFail {
		return whole("json: no line is a JSON value")
	}
	return v.validateRaw(b, rowBase, set)
}

// parseJSONRows decodes each element into an object row. It returns the
// batch and the number of elements that were valid JSON.
func parseJSONRows(elems [][]byte) (*rawBatch, int) {
	b := &rawBatch{rows: make([]map[string]any, len(elems)), rowErr: map[int]rowFailure{}}
	keys := map[string]bool{}
	decoded := 0
	for i, e := range elems {
		dec := json.NewDecoder(bytes.NewReader(e))
		dec.UseNumber()
		var val any
		err := dec.Decode(&val)
		if err == nil {
			if _, terr := dec.Token(); terr != io.EOF {
				err = fmt.Errorf("trailing data after the value")
			}
		}
		if err != nil {
			b.rowErr[i] = rowFailure{reason: rUndecodable, detail: "json: " + err.Error(),
				raw: append([]byte(nil), e...)}
			continue
		}
		decoded++
		obj, ok := val.(map[string]any)
		if !ok {
			b.rowErr[i] = rowFailure{reason: rWrongSchema, detail: fmt.Sprintf("json: row is %s, not an object", jsonKind(val)),
				raw: append([]byte(nil), e...)}
			continue
		}
		b.rows[i] = obj
		for k := range obj {
			keys[k] = true
		}
	}
	b.present = func(col string) bool { return keys[col] }
	return b, decoded
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
