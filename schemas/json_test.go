package schemas

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		data      string
		good      []canonRow
		dead      map[int]string
		wholeDead string // reason of a whole-message dead letter
	}{
		{
			name: "json lines with lenient values",
			data: `{"id":"a","time":1,"event":1,"cohort":"1","age":50}
{"id":7,"time":"12.5","event":true,"cohort":2,"age":"51"}

{"id":"b","time":0,"event":"0","cohort":"control","age":5e1,"unused":[1,2]}`,
			good: []canonRow{
				{ID: "a", Time: 1, Event: true, Cohort: "1", Covs: []float64{50}},
				{ID: "7", Time: 12.5, Event: true, Cohort: "2", Covs: []float64{51}},
				{ID: "b", Time: 0, Event: false, Cohort: "control", Covs: []float64{50}},
			},
		},
		{
			name: "array of objects",
			data: ` [{"id":"a","time":1,"event":false,"cohort":"2","age":1}, {"id":"b","time":2,"event":1,"cohort":"1","age":2}] `,
			good: []canonRow{
				{ID: "a", Time: 1, Event: false, Cohort: "2", Covs: []float64{1}},
				{ID: "b", Time: 2, Event: true, Cohort: "1", Covs: []float64{2}},
			},
		},
		{
			name: "every reason code",
			data: `{"id":"a","time":1,"event":1,"cohort":"1","age":1}
{"id":"b","time":-1,"event":1,"cohort":"1","age":1}
{"id":"c","time":"abc","event":1,"cohort":"1","age":1}
{"id":"d","time":1,"event":2,"cohort":"1","age":1}
{"id":"e","time":1,"event":1,"cohort":"9","age":1}
{"id":"a","time":1,"event":1,"cohort":"1","age":1}
{"id":"f","time":1,"event":1,"cohort":"1","age":null}
{"id":"g","time":1,"event":1,"cohort":"1"}
{"id":"","time":1,"event":1,"cohort":"1","age":1}
{"id":true,"time":1,"event":1,"cohort":"1","age":1}
{"time":1,"event":1,"cohort":"1","age":1}
{"id":"h","time":null,"event":1,"cohort":"1","age":1}
{"id":"i","time":1,"event":1,"cohort":"1","age":1
[1,2,3]
{"id":"j","time":1e999,"event":1,"cohort":"1","age":1}
{"id":"k","time":1,"event":"yes","cohort":"1","age":1}
{"id":"l","time":1,"event":1,"cohort":1.5,"age":1}`,
			good: []canonRow{{ID: "a", Time: 1, Event: true, Cohort: "1", Covs: []float64{1}}},
			dead: map[int]string{1: ReasonInvalidTime, 2: ReasonInvalidTime, 3: ReasonInvalidEvent, 4: ReasonUnknownCohort,
				5: ReasonDuplicateID, 6: ReasonInvalidCovariate, 7: ReasonInvalidCovariate, 8: ReasonInvalidID, 9: ReasonInvalidID,
				10: ReasonMissingField, 11: ReasonMissingField, 12: ReasonUndecodable, 13: ReasonWrongSchema,
				14: ReasonInvalidTime, 15: ReasonInvalidEvent, 16: ReasonUnknownCohort},
		},
		{
			name: "site and observed_at when some rows have them",
			data: `{"id":"a","time":1,"event":1,"cohort":"1","age":1,"site":"s1","observed_at":"2024-01-02T03:04:05.5Z"}
{"id":"b","time":1,"event":1,"cohort":"1","age":1}
{"id":"c","time":1,"event":1,"cohort":"1","age":1,"site":4,"observed_at":1700000000}`,
			good: []canonRow{{ID: "a", Time: 1, Event: true, Cohort: "1", Covs: []float64{1}, Site: "s1", ObsUS: 1704164645500000}},
			dead: map[int]string{1: ReasonMissingField, 2: ReasonInvalidObservedAt},
		},
		{name: "empty", data: "  \n ", wholeDead: ReasonUndecodable},
		{name: "no line is json", data: "\x00\x01binary\nstuff", wholeDead: ReasonUndecodable},
		{name: "malformed array", data: `[{"id":"a"},`, wholeDead: ReasonUndecodable},
		{name: "array with trailing data", data: `[{"id":"a"}] {}`, wholeDead: ReasonUndecodable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := checkedMem(t)
			v := newTestValidator(t, testSpec(), mem)
			out, dead := v.DecodeJSON([]byte(tc.data))
			defer out.Release()
			if tc.wholeDead != "" {
				if len(dead) != 1 || dead[0].Reason != tc.wholeDead || dead[0].RowIndex != -1 || string(dead[0].Raw) != tc.data {
					t.Fatalf("dead = %+v, want one whole-message %s", dead, tc.wholeDead)
				}
				return
			}
			got := readCanonical(t, out, 1)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.good) {
				t.Errorf("good = %+v\nwant %+v", got, tc.good)
			}
			gotDead := map[int]string{}
			for _, d := range dead {
				gotDead[d.RowIndex] = d.Reason
				if d.Reason == ReasonUndecodable || d.Reason == ReasonWrongSchema {
					if d.Row != nil || len(d.Raw) == 0 {
						t.Errorf("row %d: undecodable row must carry Raw, not Row", d.RowIndex)
					}
				} else if d.Row == nil {
					t.Errorf("row %d: nil Row", d.RowIndex)
				}
			}
			want := tc.dead
			if want == nil {
				want = map[int]string{}
			}
			if !reflect.DeepEqual(gotDead, want) {
				t.Errorf("dead = %v\nwant %v", gotDead, want)
			}
		})
	}
}

func TestDeadLetterJSON(t *testing.T) {
	t.Parallel()
	d := DeadLetter{Reason: ReasonInvalidTime, Detail: `field "time" must be finite`, RowIndex: 3,
		Row: map[string]any{"id": "a", "time": nan, "neg": -inf, "age": 3.5, "n": json.Number("7")}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	row := back["row"].(map[string]any)
	if back["reason"] != ReasonInvalidTime || back["row_index"] != 3.0 || row["time"] != "NaN" || row["neg"] != "-Inf" ||
		row["age"] != 3.5 || row["n"] != 7.0 || back["raw_base64"] != nil {
		t.Errorf("marshalled %s", b)
	}
	whole := DeadLetter{Reason: ReasonUndecodable, RowIndex: -1, Raw: []byte{0, 1, 2}}
	b, err = json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"raw_base64":"AAEC"`) || !strings.Contains(string(b), `"row":null`) {
		t.Errorf("marshalled %s", b)
	}
	if c := CountByReason([]DeadLetter{d, whole, d}); c[ReasonInvalidTime] != 2 || c[ReasonUndecodable] != 1 {
		t.Errorf("CountByReason = %v", c)
	}
}
