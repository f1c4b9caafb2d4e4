package schemastest

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes body to the file name in a fresh temporary directory
// (mode 0600) and returns its path: an input file for a reader's test.
func WriteFile(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
