package sanitize

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/schemas"
)

// The dead-letter value is the dead letter's JSON with the source position
// appended: valid JSON (any topic name escaped), every field kept.
func TestDeadLetterValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    schemas.DeadLetter
		msg  message.Message
	}{
		{"row", schemas.DeadLetter{Reason: "invalid_time", Detail: `field "time" <bad>`, RowIndex: 3, Row: map[string]any{"time": "x"}},
			message.Message{Topic: "in.csv", Partition: 0, Offset: 7}},
		{"whole message", schemas.DeadLetter{Reason: "undecodable", RowIndex: -1, Raw: []byte{0, 1, 2}},
			message.Message{Topic: `we"ird\topic`, Partition: 12, Offset: 1 << 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := deadLetterValue(tc.d, tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(v, &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, v)
			}
			inner, _ := json.Marshal(tc.d)
			var want map[string]any
			if err := json.Unmarshal(inner, &want); err != nil {
				t.Fatal(err)
			}
			want["source"] = map[string]any{"topic": tc.msg.Topic, "partition": float64(tc.msg.Partition), "offset": float64(tc.msg.Offset)}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("value %s\nwant fields %v", v, want)
			}
		})
	}
}
