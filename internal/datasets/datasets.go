package datasets

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the repository's data directory, which holds flchain_tte.csv,
// kidney_tte.csv and lung_tte.csv.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := find()
	if err != nil {
		t.Fatalf("datasets: %v", err)
	}
	return d
}

// Path returns the path of one dataset file in the repository's data
// directory.
func Path(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Dir(t), name)
}

// find walks up from the working directory to the module root (the
// directory holding go.mod) and returns its data directory.
func find() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "data")
			if _, err := os.Stat(filepath.Join(d, "lung_tte.csv")); err != nil {
				return "", fmt.Errorf("dataset directory %s: %w", d, err)
			}
			return d, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above the working directory")
		}
	}
}

// Table is one dataset file read whole: its header and its rows, as text.
type Table struct {
	Header []string
	Rows   [][]string
}

// Read reads one dataset file of the repository's data directory (e.g.
// "lung_tte.csv"); a missing or malformed file fails the test.
func Read(t testing.TB, name string) Table {
	t.Helper()
	return ReadFile(t, Path(t, name))
}

// ReadFile reads a CSV file with a header row whole (a dataset, or a golden
// file kept with the script that made it); a missing, malformed or empty
// file fails the test.
func ReadFile(t testing.TB, path string) Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("datasets: open %s: %v", path, err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("datasets: read %s: %v", path, err)
	}
	if len(recs) < 1 {
		t.Fatalf("datasets: %s is empty", path)
	}
	return Table{Header: recs[0], Rows: recs[1:]}
}

// Records is the table's rows as maps from column name to value.
func (tb Table) Records() []map[string]string {
	out := make([]map[string]string, len(tb.Rows))
	for r, row := range tb.Rows {
		m := make(map[string]string, len(tb.Header))
		for i, h := range tb.Header {
			m[h] = row[i]
		}
		out[r] = m
	}
	return out
}

// Columns maps each header name to its column index.
func (tb Table) Columns() map[string]int {
	col := make(map[string]int, len(tb.Header))
	for i, h := range tb.Header {
		col[h] = i
	}
	return col
}
