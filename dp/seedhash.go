package dp

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"math"
)

// SeedHash hashes the published values of a release into the 32-byte seed
// of the simulations its intervals and p-values run (post-processing: the
// same release always gets the same simulations, and nothing private goes
// in). It is SHA-256 of the values in the order written: a float64 as its
// 8 little-endian IEEE bytes, a string as its bytes.
type SeedHash struct {
	h   hash.Hash
	buf [8]byte
}

// NewSeedHash starts an empty hash.
func NewSeedHash() *SeedHash { return &SeedHash{h: sha256.New()} }

// Float64 adds the values vs.
func (s *SeedHash) Float64(vs ...float64) {
	for _, v := range vs {
		binary.LittleEndian.PutUint64(s.buf[:], math.Float64bits(v))
		s.h.Write(s.buf[:])
	}
}

// String adds the bytes of v.
func (s *SeedHash) String(v string) { s.h.Write([]byte(v)) }

// Seed is the hash of everything added so far.
func (s *SeedHash) Seed() [32]byte {
	var seed [32]byte
	copy(seed[:], s.h.Sum(nil))
	return seed
}
