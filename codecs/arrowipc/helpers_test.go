package arrowipc

import (
	"os"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
)

// checkedMem returns a checked allocator that must be back at zero when the
// test ends.
func checkedMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	return arrowipctest.CheckedMem(t)
}

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
