package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the directory holding flchain_tte.csv, kidney_tte.csv and
// lung_tte.csv. A test that needs them fails (never skips) when they are
// missing.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := find()
	if err != nil {
		t.Fatalf("shared datasets: %v", err)
	}
	return d
}

// Path returns the path of one shared dataset file.
func Path(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Dir(t), name)
}

func find() (string, error) {
	if d := os.Getenv("DPSURV_SHARED_DATA"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "data")
			if _, err := os.Stat(filepath.Join(d, "lung_tte.csv")); err != nil {
				return "", err
			}
			return filepath.Clean(d), nil
		}
		if filepath.Dir(dir) == dir {
			return "", os.ErrNotExist
		}
	}
}
