package jsonrec

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// The strict reader accepts exactly the JSON grammar encoding/json accepts,
// on random mutations of valid rows (valid UTF-8, no \u escapes: where
// the contract departs from encoding/json, invalid Unicode text and a
// repeated key, the row is still grammatical and counted so here).
func TestJSONReaderGrammarMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	seeds := []string{
		`{"id":"a","time":1.5e3,"event":true,"cohort":"1","x":[1,{"y":null}],"z":"é\n"}`,
		`{"a":-0.0,"b":[],"c":{},"d":"\\\"\/\b\f\n\r\t","e":false,"f":null,"g":123}`,
		`{"nested":[[[[1]]]],"s":"x"}`,
	}
	alphabet := []byte(`{}[]:,"\\ -+.eE0123456789abcdefnrtu/` + "\t\n\x01")
	r := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for n := 0; n < 20000; n++ {
		b := []byte(seeds[r.IntN(len(seeds))])
		for k := 0; k < 1+r.IntN(3); k++ {
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			}
			if len(b) == 0 {
				b = []byte("{}")
			}
		}
		s := string(b)
		if !utf8.ValidString(s) || strings.Contains(s, `\u`) {
			continue
		}
		checked++
		err := ParseSlots(s, func(string) int { return -1 }, nil, map[string]struct{}{})
		var dup DupKeyError
		var notObj NotObjectError
		grammarOK := err == nil || errors.As(err, &dup) || errors.As(err, &notObj)
		if want := json.Valid(b); grammarOK != want {
			t.Fatalf("%q: strict reader grammar ok %v (err %v), encoding/json %v", s, grammarOK, err, want)
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d mutations checked", checked)
	}
}
