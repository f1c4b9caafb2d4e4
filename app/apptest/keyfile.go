package apptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeyFile writes a test PRF key (64 hex digits, mode 0600, as the service
// requires of sanitizers.key_file) to a temporary file and returns its
// path; the file goes with the test's temporary directory.
func KeyFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prf.key")
	if err := os.WriteFile(p, []byte(strings.Repeat("5a", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
