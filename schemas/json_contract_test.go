package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Issue 21, defect 5: JSON input follows RFC 8259 strictly and
// docs/producers.md exactly. On the code before, `bad\xff` and
// `bad\ud800` were rewritten to `bad\uFFFD` and merged as duplicates, a
// repeated key silently kept its last value, "0x1p4", "1_000" and "+7"
// were times and "T" and "1e0" events; and a dead letter kept 1e400 as a
// raw literal that encoding/json refuses.
func TestDecodeJSONStrictContract(t *testing.T) {
	t.Parallel()
	spec := Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days", Covariates: []string{"age"}}
	row := func(id, time, event string) string {
		return fmt.Sprintf(`{"id":%s,"time":%s,"event":%s,"cohort":"1","age":1}`, id, time, event)
	}
	cases := []struct {
		name, line string
		reason     string // "" = good
	}{
		{"plain", row(`"a"`, `1`, `1`), ""},
		{"integer id", row(`42`, `1`, `1`), ""},
		{"numeric string time", row(`"a"`, `"12.5"`, `1`), ""},
		{"exponent time", row(`"a"`, `1e2`, `1`), ""},
		{"event false", row(`"a"`, `1`, `false`), ""},
		{"event string 0", row(`"a"`, `1`, `"0"`), ""},
		{"valid surrogate pair", row(`"ok\ud83d\ude00"`, `1`, `1`), ""},
		{"escaped id", row(`"a\u0062"`, `1`, `1`), ""},

		{"invalid UTF-8 id", row("\"bad\xff\"", `1`, `1`), ReasonInvalidID},
		{"lone high surrogate id", row(`"bad\ud800"`, `1`, `1`), ReasonInvalidID},
		{"lone low surrogate id", row(`"bad\udc00x"`, `1`, `1`), ReasonInvalidID},
		{"fractional id", row(`4.0`, `1`, `1`), ReasonInvalidID},
		{"duplicate key", `{"id":"a","time":1,"time":2,"event":1,"cohort":"1","age":1}`, ReasonWrongSchema},
		{"duplicate unconfigured key", `{"id":"a","time":1,"event":1,"cohort":"1","age":1,"x":1,"x":2}`, ReasonWrongSchema},
		{"hex time", row(`"a"`, `"0x1p4"`, `1`), ReasonInvalidTime},
		{"underscore time", row(`"a"`, `"1_000"`, `1`), ReasonInvalidTime},
		{"plus time", row(`"a"`, `"+7"`, `1`), ReasonInvalidTime},
		{"spaced time", row(`"a"`, `" 7"`, `1`), ReasonInvalidTime},
		{"Inf time", row(`"a"`, `"Inf"`, `1`), ReasonInvalidTime},
		{"overflowing time", row(`"a"`, `1e400`, `1`), ReasonInvalidTime},
		{"event T", row(`"a"`, `1`, `"T"`), ReasonInvalidEvent},
		{"event string 1e0", row(`"a"`, `1`, `"1e0"`), ReasonInvalidEvent},
		{"event number 1e0", row(`"a"`, `1`, `1e0`), ReasonInvalidEvent},
		{"event 1.0", row(`"a"`, `1`, `1.0`), ReasonInvalidEvent},
		{"event string true", row(`"a"`, `1`, `"true"`), ReasonInvalidEvent},
		{"cohort 1.0", `{"id":"a","time":1,"event":1,"cohort":1.0,"age":1}`, ReasonUnknownCohort},
		{"number with plus", row(`"a"`, `+7`, `1`), ReasonUndecodable},
		{"leading zero", row(`"a"`, `07`, `1`), ReasonUndecodable},
		{"NaN literal", row(`"a"`, `NaN`, `1`), ReasonUndecodable},
		{"single quotes", `{'id':'a'}`, ReasonUndecodable},
		{"raw control character", "{\"id\":\"a\tb\",\"time\":1,\"event\":1,\"cohort\":\"1\",\"age\":1}", ReasonUndecodable},
		{"trailing comma", `{"id":"a","time":1,"event":1,"cohort":"1","age":1,}`, ReasonUndecodable},
	}
	// Each case alone, after a good anchor row.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedMem(t)
			v := newTestValidator(t, spec, mem)
			msg := `{"id":"anchor","time":1,"event":1,"cohort":"1","age":1}` + "\n" + c.line
			out, dead := v.DecodeJSON([]byte(msg))
			defer out.Release()
			if c.reason == "" {
				if out.NumRows() != 2 || len(dead) != 0 {
					t.Fatalf("good rows %d, dead %+v; want the row good", out.NumRows(), dead)
				}
				return
			}
			if out.NumRows() != 1 || len(dead) != 1 || dead[0].Reason != c.reason || dead[0].RowIndex != 1 {
				t.Fatalf("good rows %d, dead %+v; want row 1 dead-lettered %s", out.NumRows(), dead, c.reason)
			}
			// Every dead letter is JSON that encoding/json reads back.
			b, err := dead[0].MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var back map[string]any
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("dead letter %s is not readable JSON: %v", b, err)
			}
		})
	}
}

// The two invalid ids of the issue are not merged with a valid one.
func TestDecodeJSONInvalidIDsNotMerged(t *testing.T) {
	t.Parallel()
	spec := Spec{Cohorts: []string{"1"}, TimeUnit: "days"}
	v := newTestValidator(t, spec, checkedMem(t))
	msg := "{\"id\":\"bad\xff\",\"time\":1,\"event\":1,\"cohort\":\"1\"}\n" +
		`{"id":"bad\ud800","time":2,"event":1,"cohort":"1"}` + "\n" +
		`{"id":"bad\ufffd","time":3,"event":1,"cohort":"1"}`
	out, dead := v.DecodeJSON([]byte(msg))
	defer out.Release()
	got := CountByReason(dead)
	if out.NumRows() != 1 || got[ReasonInvalidID] != 2 || len(dead) != 2 {
		t.Fatalf("good %d, dead %v; want the U+FFFD row good and two invalid_id", out.NumRows(), got)
	}
}

// A dead letter with 1e400 (an unknown cohort row) is JSON encoding/json
// reads back: the literal is kept as a string.
func TestDeadLetterHugeNumberIsReadableJSON(t *testing.T) {
	t.Parallel()
	spec := Spec{Cohorts: []string{"1"}, TimeUnit: "days"}
	v := newTestValidator(t, spec, checkedMem(t))
	out, dead := v.DecodeJSON([]byte(`{"id":"a","time":1,"event":1,"cohort":"9","weight":1e400,"n":-1E+999}`))
	defer out.Release()
	if len(dead) != 1 {
		t.Fatalf("dead %+v", dead)
	}
	b, err := dead[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Row map[string]any `json:"row"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("dead letter %s: %v", b, err)
	}
	if back.Row["weight"] != "1e400" || back.Row["n"] != "-1E+999" {
		t.Errorf("row %v: want the literals kept as strings", back.Row)
	}
}

// A whole-message JSON dead letter counts the rows (lines) it holds; the
// decoded rows count against the decode bound.
func TestDecodeJSONWholeMessageCountsRowsAndBound(t *testing.T) {
	t.Parallel()
	spec := Spec{Cohorts: []string{"1"}, TimeUnit: "days"}
	v := newTestValidator(t, spec, checkedMem(t))
	out, dead := v.DecodeJSON([]byte("\x00\x01\n\x02\n\x03"))
	out.Release()
	if len(dead) != 1 || dead[0].RowIndex != -1 || dead[0].Rows() != 3 {
		t.Fatalf("dead %+v: want one whole-message dead letter of 3 rows", dead)
	}
	v.SetMaxDecodeBytes(1 << 20)
	msg := strings.Repeat(`{"id":"x"}`+"\n", 40_000) // 440 KB: ~ 10 MB of slots
	out, dead = v.DecodeJSON([]byte(msg))
	out.Release()
	if len(dead) != 1 || dead[0].RowIndex != -1 || dead[0].Reason != ReasonUndecodable || dead[0].Rows() != 40_000 ||
		!strings.Contains(dead[0].Detail, "input.max_decoded_bytes") {
		t.Fatalf("dead %d letters, first %+v: want one whole-message dead letter over the decode bound", len(dead), dead[0].Detail)
	}
}
