package pipeline

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
)

// DecodeKey accepts a key as hex text (at least 64 hex digits) or as raw
// bytes (at least 32).
func DecodeKey(b []byte) ([]byte, error) {
	t := bytes.TrimSpace(b)
	if len(t) >= 2*dp.MinKeyBytes && len(t)%2 == 0 {
		if k, err := hex.DecodeString(string(t)); err == nil {
			return k, nil
		}
	}
	if len(b) < dp.MinKeyBytes {
		return nil, fmt.Errorf("sanitizers.key_file: key has %d bytes, need at least %d (or %d hex digits)", len(b), dp.MinKeyBytes, 2*dp.MinKeyBytes)
	}
	return b, nil
}

// EphemeralKey returns a fresh random key for the demo and benchmarks; the
// caller must say that it is ephemeral.
func EphemeralKey() []byte {
	k := make([]byte, dp.MinKeyBytes)
	_, _ = rand.Read(k) // never fails on supported platforms
	return k
}
