// Package csvrectest generates hostile CSV input for the tests of csvrec
// and of schemas' CSV reader. It depends on the standard library only.
package csvrectest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Cells are hostile CSV cells: nulls, numbers strconv reads and does not,
// quotes in and out of place, multi-line fields, invalid UTF-8.
var Cells = []string{
	"", "NA", " NA ", "0", "1", "2", "1.0", "0.0", "true", "FALSE", " 17 ", "abc", "-3", "Inf", "NaN", "1e2",
	"0x1p3", "007", "123456789012345678", "9007199254740993", "3.14159", "1_000", "control", "p0001", "p0002",
	`"a,b"`, `"a""b"`, "\"multi\nline\"", `x"y`, `"1"`, `"control"`, "\t5", "\u00a05", "é", "\xff", " ",
	`""`, `"2"x`, "\"3\"\r", "1\r",
}

// RandomCSV is a CSV file with the given header and up to 40 records of
// plausible tte.v1 values and Cells (empty lines, \r\n, a byte-order mark,
// records with a field too many or too few, no final newline).
func RandomCSV(r *rand.Rand, header []string) []byte {
	var b bytes.Buffer
	if r.IntN(4) == 0 {
		b.WriteString("\uFEFF")
	}
	b.WriteString(strings.Join(header, ","))
	b.WriteString("\n")
	n := r.IntN(40)
	for range n {
		switch r.IntN(12) {
		case 0:
			b.WriteString("\n") // empty line
			continue
		case 1:
			b.WriteString("\r\n")
			continue
		}
		nf := len(header)
		if r.IntN(10) == 0 {
			nf += r.IntN(3) - 1
		}
		for k := range nf {
			if k > 0 {
				b.WriteByte(',')
			}
			if r.IntN(3) == 0 {
				b.WriteString(Cells[r.IntN(len(Cells))])
				continue
			}
			switch k {
			case 0:
				fmt.Fprintf(&b, "p%03d", r.IntN(30))
			case 3:
				b.WriteString([]string{"1", "2", "control"}[r.IntN(3)])
			case 2:
				b.WriteString([]string{"0", "1"}[r.IntN(2)])
			default:
				fmt.Fprintf(&b, "%d", r.IntN(5000))
			}
		}
		if r.IntN(5) == 0 {
			b.WriteString("\r\n")
		} else {
			b.WriteString("\n")
		}
	}
	if r.IntN(3) == 0 && b.Len() > 0 {
		b.Truncate(b.Len() - 1) // no final newline
	}
	return b.Bytes()
}
