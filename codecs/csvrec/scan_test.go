package csvrec

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsurv/dpsurv/codecs/csvrec/csvrectest"
)

// scanOracle is ScanColumn with encoding/csv (what audit.ScanLabels
// did).
func scanOracle(r io.Reader, column string) ([]string, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	header, err := cr.Read()
	if err != nil {
		return nil, err
	}
	k := columnIndex(header, column)
	if k < 0 {
		return nil, errors.New("no column")
	}
	var out []string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if k < len(rec) {
			out = append(out, rec[k])
		}
	}
}

// columnIndex finds the last cell of a name, reads the first cell without
// its byte-order mark, and says -1 for a name the header lacks.
func TestColumnIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header []string
		column string
		want   int
	}{
		{[]string{"id", "time"}, "time", 1},
		{[]string{"\uFEFFid", "time"}, "id", 0},
		{[]string{"x", "y", "x"}, "x", 2},
		{[]string{"id", "time"}, "age", -1},
		{[]string{"\uFEFF"}, "", 0},
	} {
		if got := columnIndex(slices.Clone(tc.header), tc.column); got != tc.want {
			t.Errorf("columnIndex(%q, %q) = %d, want %d", tc.header, tc.column, got, tc.want)
		}
	}
}

// ScanColumn gives the cells encoding/csv gives, on the hostile inputs
// of TestReadCSVMatchesEncodingCSV, for every column and several chunk
// sizes.
func TestScanCSVColumnMatchesEncodingCSV(t *testing.T) {
	t.Parallel()
	headers := [][]string{
		{"id", "time", "event", "cohort", "age"},
		{"id", "time", "event", "cohort", "age", "x", "x"},
	}
	r := rand.New(rand.NewPCG(3, 4))
	inputs := [][]byte{nil, []byte("\n\r\n"), []byte("id,cohort\n\"a\nb\",\"c,d\"\r\n\n1,2,3\n4\n"), []byte("\n\nid,cohort\r\n1,\"x\"\"y\"")}
	for trial := range 200 {
		inputs = append(inputs, csvrectest.RandomCSV(r, headers[trial%len(headers)]))
	}
	for _, data := range inputs {
		for _, col := range []string{"id", "cohort", "age", "x"} {
			want, werr := scanOracle(bytes.NewReader(data), col)
			for _, chunk := range []int{1 << 20, 5, 64} {
				var got []string
				err := scanColumn(bytes.NewReader(data), col, chunk, func(b []byte) { got = append(got, string(b)) })
				if (err == nil) != (werr == nil) || !slices.Equal(got, want) {
					t.Fatalf("column %q chunk %d: %q, %v; encoding/csv %q, %v\ninput %q", col, chunk, got, err, want, werr, data)
				}
			}
		}
	}
}
