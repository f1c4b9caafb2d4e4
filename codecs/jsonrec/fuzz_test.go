package jsonrec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseSlots: on any row, ParseSlots never panics, accepts exactly
// the rows encoding/json finds grammatical (where the contract departs
// from encoding/json, invalid Unicode text and a repeated key, the row is
// still grammatical and counted so), fills only configured slots, and
// ParseObject agrees with it on the grammar.
func FuzzParseSlots(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","time":1.5e3,"event":true,"cohort":"1","x":[1,{"y":null}],"z":"é\n"}`,
		`{"a":-0.0,"b":[],"c":{},"d":"\\\"\/\b\f\n\r\t","e":false,"f":null,"g":123}`,
		`{"nested":[[[[1]]]],"s":"x"}`,
		`{"id":"a","id":"b"}`,
		`[1,2]`,
		`{"id":"\ud800"}`,
		"{\"id\":\"\xff\"}",
	} {
		f.Add(s)
	}
	slots := map[string]int{"id": 0, "time": 1, "event": 2}
	slotOf := func(k string) int {
		if i, ok := slots[k]; ok {
			return i
		}
		return -1
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals := make([]Value, len(slots))
		err := ParseSlots(s, slotOf, vals, map[string]struct{}{})
		var dup DupKeyError
		var notObj NotObjectError
		grammarOK := err == nil || errors.As(err, &dup) || errors.As(err, &notObj)
		if utf8.ValidString(s) && !strings.Contains(s, `\u`) {
			if want := json.Valid([]byte(s)); grammarOK != want {
				t.Fatalf("%q: strict reader grammar ok %v (err %v), encoding/json %v", s, grammarOK, err, want)
			}
		}
		if err != nil {
			return
		}
		for k, v := range vals {
			if v.Kind > Nested {
				t.Fatalf("slot %d has kind %d", k, v.Kind)
			}
		}
		if _, _, err := ParseObject(s, func(string) bool { return true }, func(string) int { return 16 }, map[string]struct{}{}); err != nil {
			t.Fatalf("%q: ParseSlots accepts the row, ParseObject refuses it: %v", s, err)
		}
	})
}
