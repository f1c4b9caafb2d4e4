package sanitize_test

import (
	"bytes"
	"testing"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

// Default-deny covers the Kafka key and headers: an input keyed by patient
// (MRN and name) with identifying headers yields a sanitized message whose
// key is the public input partition and whose only header is the source
// position; no byte of the input key or headers reaches the sanitized
// message.
func TestSanitizedMessageKeyAndHeaders(t *testing.T) {
	p, msgs := newArrowProcessor(t, []string{"A", "B", "C"}, 50, 3)
	secrets := []string{"MRN-0042-Jane-Doe", "Jane Doe", "MRN-0042", "x-patient-name", "x-mrn"}
	in := message.Message{Topic: "tte.raw", Partition: 3, Offset: 17, Key: []byte("MRN-0042-Jane-Doe"), Value: msgs[0].Value,
		Headers: []message.Header{{Key: "x-patient-name", Value: []byte("Jane Doe")}, {Key: "x-mrn", Value: []byte("MRN-0042")}}}
	res, err := process(p, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Out) != 1 || res.Records != 50 {
		t.Fatalf("%d messages, %d records", len(res.Out), res.Records)
	}
	out := res.Out[0]
	if string(out.Key) != "p3" {
		t.Fatalf("sanitized key %q, want the input partition p3", out.Key)
	}
	if len(out.Headers) != 1 || out.Headers[0].Key != sanitize.HeaderSource || string(out.Headers[0].Value) != "tte.raw/3/17" {
		t.Fatalf("sanitized headers %+v, want only %s", out.Headers, sanitize.HeaderSource)
	}
	for _, s := range secrets {
		for _, b := range [][]byte{out.Key, out.Value, []byte(out.Headers[0].Key), out.Headers[0].Value} {
			if bytes.Contains(b, []byte(s)) {
				t.Fatalf("sanitized message carries %q from the input key or headers", s)
			}
		}
	}
	// The same patient's messages keep one key (one output partition,
	// hence their order); another partition gets another key.
	in2 := in
	in2.Offset, in2.Partition = 18, 4
	res2, err := process(p, in2)
	if err != nil {
		t.Fatal(err)
	}
	if string(res2.Out[0].Key) != "p4" {
		t.Fatalf("partition 4 key %q", res2.Out[0].Key)
	}
}
