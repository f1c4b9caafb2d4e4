package dp

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync"
)

// Source is a stream of uniformly distributed 64-bit words. Production code
// uses NewSecureSource; tests inject a seeded source (NewSeededSource) so that
// statistical tests are reproducible.
type Source interface {
	Uint64() uint64
}

// secureSource is a ChaCha8 stream (a CSPRNG) seeded from crypto/rand, safe
// for concurrent use.
type secureSource struct {
	mu sync.Mutex
	c  *rand.ChaCha8
}

// NewSecureSource returns a cryptographically secure Source seeded from the
// operating system's entropy. It is safe for concurrent use.
func NewSecureSource() Source {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		// crypto/rand.Read never returns an error on supported platforms
		// (Go 1.24+ crashes the program instead); keep the check for clarity.
		panic("dp: crypto/rand failed: " + err.Error())
	}
	return &secureSource{c: rand.NewChaCha8(seed)}
}

func (s *secureSource) Uint64() uint64 {
	s.mu.Lock()
	v := s.c.Uint64()
	s.mu.Unlock()
	return v
}

// NewSeededSource returns a deterministic ChaCha8 Source for tests and for
// reproducible evaluations. It must never be used for a real release: the
// pipeline only ever constructs NewSecureSource.
func NewSeededSource(seed uint64) Source {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	copy(s[8:], "dpsurv-seeded-test-source")
	return rand.NewChaCha8(s)
}

// Float64 returns a uniform float64 in [0, 1) with 53 random bits.
func Float64(s Source) float64 {
	return float64(s.Uint64()>>11) * (1.0 / (1 << 53))
}

// Uint64n returns a uniform integer in [0, n) without modulo bias
// (Lemire's method). n must be > 0.
func Uint64n(s Source, n uint64) uint64 {
	return uint64nOf(s, s.Uint64(), n)
}
