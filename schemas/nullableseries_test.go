package schemas_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsurv/dpsurv/schemas"
)

// NullableSeries writes the bytes encoding/json writes for the same
// values as a []NullableFloat (one Marshaler call per value): on nil,
// empty and 2,000 random series of numbers of every magnitude, NaN and
// ±Inf, inside a struct as the wire types carry them; and decodes back.
func TestNullableSeriesSameBytes(t *testing.T) {
	type perValue struct {
		S []schemas.NullableFloat `json:"s"`
	}
	type perSeries struct {
		S schemas.NullableSeries `json:"s"`
	}
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-310, math.MaxFloat64, 1e21, 1e-7, 0.1, 123456789}
	cases := [][]schemas.NullableFloat{nil, {}}
	for range 2000 {
		s := make([]schemas.NullableFloat, rng.IntN(20))
		for i := range s {
			switch rng.IntN(3) {
			case 0:
				s[i] = schemas.NullableFloat(special[rng.IntN(len(special))])
			case 1:
				s[i] = schemas.NullableFloat(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)))
			default:
				s[i] = schemas.NullableFloat(math.Float64frombits(rng.Uint64()))
			}
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		want, err := json.Marshal(perValue{s})
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(perSeries{s})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v: NullableSeries wrote %s, []NullableFloat %s", s, got, want)
		}
		var back perSeries
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if (back.S == nil) != (s == nil) || len(back.S) != len(s) {
			t.Fatalf("%s decoded to %v", got, back.S)
		}
		for i, v := range s {
			if w := float64(v); !(float64(back.S[i]) == w || (math.IsNaN(float64(back.S[i])) && (math.IsNaN(w) || math.IsInf(w, 0)))) {
				t.Fatalf("%s: value %d decoded to %v, want %v", got, i, back.S[i], w)
			}
		}
	}
}
