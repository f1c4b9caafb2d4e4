package sanitize

import (
	"strings"

	"github.com/dpsurv/dpsurv/message"
)

// W3C Trace Context header names (https://www.w3.org/TR/trace-context/).
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// outHeaders are the headers of every message the stream writes for msg:
// the source position and, when msg carries a well-formed W3C trace
// context, its traceparent and tracestate. No other input header is ever
// copied (a header may carry anything a producer put in it).
func outHeaders(msg message.Message) []message.Header {
	return append([]message.Header{sourceHeader(msg)}, TraceContext(msg.Headers)...)
}

// TraceContext returns the traceparent header of hdrs, and its tracestate,
// when the traceparent is well-formed (exactly one, version 00 syntax or a
// later version's 00 prefix, lowercase hex, ids not all zero). A malformed
// or repeated traceparent returns nothing; a malformed tracestate is
// dropped on its own (the spec's rule: the traceparent still propagates).
// The values are copied, never aliased to the input message's buffers.
func TraceContext(hdrs []message.Header) []message.Header {
	var parent []byte
	var states []string
	n := 0
	for _, h := range hdrs {
		switch strings.ToLower(h.Key) {
		case HeaderTraceParent:
			parent = h.Value
			n++
		case HeaderTraceState:
			states = append(states, string(h.Value))
		}
	}
	if n != 1 || !validTraceParent(parent) {
		return nil
	}
	out := []message.Header{{Key: HeaderTraceParent, Value: append([]byte(nil), parent...)}}
	if len(states) > 0 {
		if st := strings.Join(states, ","); validTraceState(st) {
			out = append(out, message.Header{Key: HeaderTraceState, Value: []byte(st)})
		}
	}
	return out
}

// validTraceParent: version "-" trace-id "-" parent-id "-" flags, 55
// characters for version 00; a later version may append "-" and more.
func validTraceParent(v []byte) bool {
	if len(v) < 55 || (len(v) > 55 && (v[55] != '-' || string(v[:2]) == "00")) {
		return false
	}
	if v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return false
	}
	version, trace, parent, flags := v[0:2], v[3:35], v[36:52], v[53:55]
	if !lowerHex(version) || string(version) == "ff" || !lowerHex(trace) || !lowerHex(parent) || !lowerHex(flags) {
		return false
	}
	return !allZero(trace) && !allZero(parent)
}

func lowerHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}

// validTraceState: at most 32 comma-separated list members key=value
// (empty members allowed), keys unique, in the spec's key and value
// grammars, at most 512 bytes in all.
func validTraceState(s string) bool {
	if len(s) > 512 {
		return false
	}
	seen := map[string]bool{}
	members := 0
	for _, m := range strings.Split(s, ",") {
		m = strings.Trim(m, " \t")
		if m == "" {
			continue
		}
		k, v, ok := strings.Cut(m, "=")
		if !ok || !validStateKey(k) || !validStateValue(v) || seen[k] {
			return false
		}
		seen[k] = true
		members++
	}
	return members > 0 && members <= 32
}

func validStateKey(k string) bool {
	tenant, system, multi := strings.Cut(k, "@")
	keyChar := func(c byte) bool {
		return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '*' || c == '/'
	}
	simple := func(s string, max int, first func(byte) bool) bool {
		if len(s) == 0 || len(s) > max || !first(s[0]) {
			return false
		}
		for i := 1; i < len(s); i++ {
			if !keyChar(s[i]) {
				return false
			}
		}
		return true
	}
	lowerDigit := func(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
	lower := func(c byte) bool { return 'a' <= c && c <= 'z' }
	if !multi {
		return simple(k, 256, lowerDigit)
	}
	return simple(tenant, 241, lowerDigit) && simple(system, 14, lower)
}

func validStateValue(v string) bool {
	if len(v) == 0 || len(v) > 256 || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e || c == ',' || c == '=' {
			return false
		}
	}
	return true
}
