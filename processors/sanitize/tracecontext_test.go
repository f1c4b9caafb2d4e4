package sanitize_test

import (
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

const validParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestTraceContext(t *testing.T) {
	h := func(kv ...string) []message.Header {
		var out []message.Header
		for i := 0; i < len(kv); i += 2 {
			out = append(out, message.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		in          []message.Header
		parent      string // "" = nothing propagated
		state       string
		stateAbsent bool
	}{
		{"valid with state", h("traceparent", validParent, "tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"), validParent, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", false},
		{"valid without state", h("traceparent", validParent), validParent, "", true},
		{"header name case-insensitive", h("Traceparent", validParent), validParent, "", true},
		{"two tracestate headers joined", h("traceparent", validParent, "tracestate", "a=1", "tracestate", "b=2"), validParent, "a=1,b=2", false},
		{"future version with suffix", h("traceparent", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds"), "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds", "", true},
		{"malformed state dropped alone", h("traceparent", validParent, "tracestate", "UPPER=1"), validParent, "", true},
		{"state with a duplicate key dropped", h("traceparent", validParent, "tracestate", "a=1,a=2"), validParent, "", true},
		{"state value with =", h("traceparent", validParent, "tracestate", "a=b=c"), validParent, "", true},
		{"state too long", h("traceparent", validParent, "tracestate", "a="+strings.Repeat("x", 600)), validParent, "", true},
		{"uppercase hex", h("traceparent", strings.ToUpper(validParent)), "", "", true},
		{"short", h("traceparent", validParent[:54]), "", "", true},
		{"version 00 with suffix", h("traceparent", validParent+"-x"), "", "", true},
		{"version ff", h("traceparent", "ff"+validParent[2:]), "", "", true},
		{"zero trace id", h("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"), "", "", true},
		{"zero parent id", h("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"), "", "", true},
		{"non-hex", h("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"), "", "", true},
		{"wrong separator", h("traceparent", "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "", "", true},
		{"patient id smuggled", h("traceparent", "00-MRN-0042-Jane-Doe"), "", "", true},
		{"two traceparents", h("traceparent", validParent, "traceparent", validParent), "", "", true},
		{"state without parent", h("tracestate", "a=1"), "", "", true},
		{"no headers", nil, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sanitize.TraceContext(tc.in)
			if tc.parent == "" {
				if len(got) != 0 {
					t.Fatalf("propagated %v", got)
				}
				return
			}
			if len(got) == 0 || got[0].Key != "traceparent" || string(got[0].Value) != tc.parent {
				t.Fatalf("got %v, want traceparent %s", got, tc.parent)
			}
			if tc.stateAbsent != (len(got) == 1) {
				t.Fatalf("got %v, tracestate absent want %v", got, tc.stateAbsent)
			}
			if !tc.stateAbsent && (got[1].Key != "tracestate" || string(got[1].Value) != tc.state) {
				t.Fatalf("tracestate %v, want %s", got[1], tc.state)
			}
		})
	}
}

// The sanitized message carries the source header and the input's W3C
// trace context, and nothing else of the input's headers; a malformed
// traceparent is dropped (with its tracestate).
func TestSanitizedMessageCarriesTraceContext(t *testing.T) {
	p, msgs := newArrowProcessor(t, []string{"A", "B"}, 20, 5)
	for _, tc := range []struct {
		name   string
		parent string
		want   []string
	}{ // output.trace_context: false turns it off
		{"well-formed", validParent, []string{sanitize.HeaderSource + "=in/0/1", "traceparent=" + validParent, "tracestate=vendor=abc"}},
		{"malformed", "00-" + strings.Repeat("a", 31) + "-00f067aa0ba902b7-01", []string{sanitize.HeaderSource + "=in/0/1"}},
		{"turned off", validParent, []string{sanitize.HeaderSource + "=in/0/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.NoTraceContext = tc.name == "turned off"
			in := message.Message{Topic: "in", Partition: 0, Offset: 1, Value: msgs[0].Value, Headers: []message.Header{
				{Key: "x-mrn", Value: []byte("MRN-0042")}, {Key: "traceparent", Value: []byte(tc.parent)},
				{Key: "tracestate", Value: []byte("vendor=abc")}, {Key: "baggage", Value: []byte("patient=MRN-0042")}}}
			res, err := process(p, in)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Out) != 1 {
				t.Fatalf("%d messages", len(res.Out))
			}
			var got []string
			for _, h := range res.Out[0].Headers {
				got = append(got, h.Key+"="+string(h.Value))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("headers %q, want %q", got, tc.want)
			}
		})
	}
}
