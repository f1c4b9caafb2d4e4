package dp

import (
	"math/bits"
	"testing"
)

// scriptedSource yields its words in order, then a seeded stream.
type scriptedSource struct {
	words []uint64
	rest  Source
}

func (s *scriptedSource) Uint64() uint64 {
	if len(s.words) > 0 {
		w := s.words[0]
		s.words = s.words[1:]
		return w
	}
	return s.rest.Uint64()
}

// uint64nReference is Uint64n as it was written before the samplers'
// inlined fast path (lemire, uint64nRetry).
func uint64nReference(s Source, n uint64) uint64 {
	if n&(n-1) == 0 {
		return s.Uint64() & (n - 1)
	}
	hi, lo := bits.Mul64(s.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.Uint64(), n)
		}
	}
	return hi
}

// TestUint64nMatchesReference: Uint64n (lemire and its rejection step
// uint64nRetry) returns the reference's value and takes the same words,
// including the rare first words that Lemire's method rejects (x n mod
// 2^64 below 2^64 mod n), which a random stream almost never shows.
func TestUint64nMatchesReference(t *testing.T) {
	rng := NewSeededSource(3)
	ns := []uint64{0, 1, 2, 3, 5, 6, 7, 1 << 20, 1<<20 + 7, 3 << 30, 1<<63 + 1, ^uint64(0)}
	for range 40 {
		ns = append(ns, rng.Uint64()>>(rng.Uint64()%64))
	}
	for _, n := range ns {
		// first words: random, zero (rejected for every n with 2^64 mod n
		// > 0) and words whose product with n has a low word below n
		firsts := []uint64{0, 1, ^uint64(0), rng.Uint64(), rng.Uint64()}
		if n > 1 {
			q, _ := bits.Div64(1, 0, n) // floor(2^64 / n)
			firsts = append(firsts, q, q+1, 2*q+1)
		}
		for _, x := range firsts {
			seed := rng.Uint64()
			script := []uint64{x, 0, 0, x}
			a := &countingSource{src: &scriptedSource{words: append([]uint64{}, script...), rest: NewSeededSource(seed)}}
			b := &countingSource{src: &scriptedSource{words: append([]uint64{}, script...), rest: NewSeededSource(seed)}}
			got, want := Uint64n(a, n), uint64nReference(b, n)
			if got != want || a.n != b.n {
				t.Fatalf("n %d, first word %#x: Uint64n %d after %d words, reference %d after %d", n, x, got, a.n, want, b.n)
			}
		}
	}
}
