package app

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
)

// DecodeKey accepts a key as hex text (exactly 64 hex digits, surrounding
// whitespace ignored) or as exactly 32 raw bytes. Anything else (a text
// file, a key of another length) is refused: taking the first bytes of an
// arbitrary file as the key would hide a misconfiguration.
func DecodeKey(b []byte) ([]byte, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 2*dp.MinKeyBytes {
		if k, err := hex.DecodeString(string(t)); err == nil {
			return k, nil
		}
	}
	if len(b) != dp.MinKeyBytes {
		return nil, fmt.Errorf("sanitizers.key_file: key file has %d bytes: want exactly %d raw bytes or %d hex digits", len(b), dp.MinKeyBytes, 2*dp.MinKeyBytes)
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
