package csvrec

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsurv/dpsurv/codecs/csvrec/csvrectest"
)

// FuzzScanColumn: on any bytes, the chunked record reader gives the cells
// encoding/csv gives (LazyQuotes, variable field count), whatever the
// chunk size, and never panics.
func FuzzScanColumn(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		f.Add(csvrectest.RandomCSV(r, []string{"id", "time", "event", "cohort", "x"}))
	}
	f.Add([]byte("id,x\n\"a\nb\",\"c,d\"\r\n\n1,2,3\n4\n"))
	f.Add([]byte("\uFEFFid,x\r\n\"\"\"\",x\"y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, col := range []string{"id", "x"} {
			want, werr := scanOracle(bytes.NewReader(data), col)
			for _, chunk := range []int{1 << 20, 7} {
				var got []string
				err := scanColumn(bytes.NewReader(data), col, chunk, func(b []byte) { got = append(got, string(b)) })
				if (err == nil) != (werr == nil) || !slices.Equal(got, want) {
					t.Fatalf("column %q chunk %d: %q, %v; encoding/csv %q, %v", col, chunk, got, err, want, werr)
				}
			}
		}
	})
}
