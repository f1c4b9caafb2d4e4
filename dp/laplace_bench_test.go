package dp

import "testing"

// BenchmarkDiscreteLaplace draws at a KM node scale (not dyadic: the
// rational scale has a 2^30 denominator) from a seeded ChaCha8 source, as
// the interval simulations do, and from the secure source of a release.
func BenchmarkDiscreteLaplace(b *testing.B) {
	for _, c := range []struct {
		name string
		src  Source
	}{{"seeded", NewSeededSource(1)}, {"secure", NewSecureSource()}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := DiscreteLaplace(c.src, 5.37); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("sampler", func(b *testing.B) { // the scale's rational form worked out once
		src := NewSeededSource(1)
		l, err := NewLaplaceSampler(5.37)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			l.Draw(src)
		}
	})
}
