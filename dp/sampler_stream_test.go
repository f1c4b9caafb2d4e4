package dp

import (
	"hash/fnv"
	"math"
	"strconv"
	"testing"
)

// countingSource counts the words its samplers take.
type countingSource struct {
	src Source
	n   int
}

func (c *countingSource) Uint64() uint64 { c.n++; return c.src.Uint64() }

// TestExactSamplersFixedSeedStream pins what the exact samplers return
// for a fixed seed, and how many words of the source they take: a change
// of either changes every fixed-seed study that draws noise, so a speed-up
// of the samplers must leave this hash alone (the value was taken on the
// samplers before their fast paths).
func TestExactSamplersFixedSeedStream(t *testing.T) {
	src := &countingSource{src: NewSeededSource(2026)}
	h := fnv.New64a()
	put := func(v int64) { h.Write(strconv.AppendInt(nil, v, 36)); h.Write([]byte{','}) }
	// 2000 draws of one sampler, then the words taken so far
	draws := func(draw func() (int64, error)) {
		for range 2000 {
			v, err := draw()
			if err != nil {
				t.Fatal(err)
			}
			put(v)
		}
		put(int64(src.n))
	}
	for _, s2 := range []uint64{1, 2, 3, 7, 100, 1000, 1 << 20, 1<<20 + 7, 3 << 20, 1<<22 - 1, 1 << 24} {
		draws(func() (int64, error) { return DiscreteGaussian(src, s2) })
	}
	for _, sigma := range []float64{1e-3, 0.3, 1, 2.5, 1e4} {
		draws(func() (int64, error) {
			y, err := GaussianOnGrid(src, sigma)
			return int64(math.Float64bits(y)), err
		})
	}
	for _, scale := range []float64{0.1, 1, 3.7, 1000, 1 << 20} {
		draws(func() (int64, error) { return DiscreteLaplace(src, scale) })
	}
	for _, c := range [][2]uint64{{0, 1}, {1, 1}, {1, 3}, {5, 3}, {7, 1 << 30}, {1<<32 + 5, 1 << 30}} {
		var k int64
		for range 2000 {
			if BernoulliExp(src, c[0], c[1]) {
				k++
			}
		}
		put(k)
		put(int64(src.n))
	}
	put(int64(src.src.Uint64()))
	const want = "8326bbaca7678b21"
	if got := strconv.FormatUint(h.Sum64(), 16); got != want {
		t.Errorf("fixed-seed stream hash %s, want %s (%d words taken)", got, want, src.n)
	}
}

func BenchmarkGaussianOnGrid(b *testing.B) {
	src := NewSeededSource(1)
	for b.Loop() {
		if _, err := GaussianOnGrid(src, 0.37); err != nil {
			b.Fatal(err)
		}
	}

}

// TestOnGridMatchesFrexp: onGrid's exponent-bit fast path gives the grid
// and grid units that Frexp, Ldexp and a division give, bit for bit, from
// the subnormals to the largest float64.
func TestOnGridMatchesFrexp(t *testing.T) {
	rng := NewSeededSource(7)
	check := func(sigma float64) {
		_, e := math.Frexp(sigma)
		wg := math.Ldexp(1, e-11)
		wu := sigma / wg
		g, u := onGrid(sigma)
		if math.Float64bits(g) != math.Float64bits(wg) || math.Float64bits(u) != math.Float64bits(wu) {
			t.Fatalf("sigma %v: onGrid (%v, %v), want (%v, %v)", sigma, g, u, wg, wu)
		}
	}
	for _, s := range []float64{math.SmallestNonzeroFloat64, 0x1p-1060, 0x1p-1022, 0x1p-1013, 0x1p-1012, 0x1p-1011, 1, math.MaxFloat64} {
		check(s)
	}
	for exp := uint64(0); exp <= 2046; exp++ {
		for range 20 {
			check(math.Float64frombits(exp<<52 | rng.Uint64()>>12))
		}
	}
}
