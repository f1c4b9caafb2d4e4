package csvrec

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// ParseFloat's fast path gives exactly strconv.ParseFloat's value (bit for
// bit, -0 included) on every input.
func TestParseFloatMatchesStrconv(t *testing.T) {
	t.Parallel()
	in := []string{"", "-", ".", "-.", "0", "-0", "00", "0.0", "-0.0", "5.", ".5", "-.5", "1.5.", "1..5", "1e5", "+5", " 5", "5 ",
		"123456789012345", "1234567890123456", "12345678901234.5", "1234567890123.45", "123456789012345.6", "-123456789012345",
		"0.000000000000001", "0.0000000000000001", "9007199254740993", "1_0", "0x10", "NaN", "Inf", "-Inf", "1.7976931348623157e308"}
	r := rand.New(rand.NewPCG(9, 10))
	for range 200000 {
		var b []byte
		if r.IntN(4) == 0 {
			b = append(b, '-')
		}
		for range r.IntN(18) {
			b = append(b, byte('0'+r.IntN(10)))
		}
		if r.IntN(2) == 0 {
			k := r.IntN(len(b) + 1)
			b = append(b[:k], append([]byte{'.'}, b[k:]...)...)
		}
		in = append(in, string(b))
	}
	for _, s := range in {
		got, gok := ParseFloat([]byte(s))
		want, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if wok := err == nil; gok != wok || (gok && math.Float64bits(got) != math.Float64bits(want)) {
			t.Fatalf("ParseFloat(%q) = %v, %v; strconv.ParseFloat %v, %v", s, got, gok, want, err)
		}
	}
}
