package arrowipc

import (
	"os"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
)

// readAll opens path with OpenFile and returns its records (retained; the
// caller releases them).
func readAll(t testing.TB, path string, zeroCopy bool) ([]arrow.Record, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sr, _, err := OpenFile(f, zeroCopy)
	if err != nil {
		return nil, err
	}
	defer sr.Release()
	var recs []arrow.Record
	for sr.Next() {
		rec := sr.Record()
		rec.Retain()
		recs = append(recs, rec)
	}
	return recs, sr.Err()
}
