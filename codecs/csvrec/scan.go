package csvrec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ScanColumn calls fn with the cell of column in every record of a CSV
// file that has that many fields, in file order: the records encoding/csv
// gives with LazyQuotes and a variable field count (the reader ReadFile
// uses), the header's first cell without its byte-order mark, the last
// column of that name when there are several. The cell is only valid
// during the call. An error is returned for a missing header or column
// and for I/O errors.
func ScanColumn(r io.Reader, column string, fn func(cell []byte)) error {
	return scanColumn(r, column, ChunkSize, fn)
}

// columnIndex is the index of column in a CSV header (at least one cell):
// the last cell of that name, the first cell read without its byte-order
// mark; -1 if there is none.
func columnIndex(header []string, column string) int {
	header[0] = strings.TrimPrefix(header[0], "\uFEFF")
	k := -1
	for i, h := range header {
		if h == column {
			k = i
		}
	}
	return k
}

func scanColumn(r io.Reader, column string, chunkSize int, fn func(cell []byte)) error {
	ck := NewChunker(r, chunkSize, 1)
	var c Chunk
	var header []string
	pos := 0
	for header == nil {
		if c.Buf != nil {
			ck.Put(c.Buf)
		}
		var err error
		if c, err = ck.Next(nil); err != nil {
			return fmt.Errorf("header: %w", err)
		}
		header, pos = Header(c.Data)
	}
	k := columnIndex(header, column)
	if k < 0 {
		return fmt.Errorf("no column %q", column)
	}
	var fields [][]byte
	var arena []byte
	for {
		data := c.Data
		for pos < len(data) {
			line, next, nl := Line(data, pos)
			if len(line) == 0 {
				pos = next
				if !nl {
					break
				}
				continue
			}
			if c.Quotes && bytes.IndexByte(line, '"') >= 0 {
				fields, arena, next = ParseRecord(data, pos, fields[:0], arena[:0])
				if k < len(fields) {
					fn(fields[k])
				}
				pos = next
				continue
			}
			pos = next
			// The k-th field of an unquoted line.
			for j := 0; j < k; j++ {
				i := bytes.IndexByte(line, ',')
				if i < 0 {
					line = nil
					break
				}
				line = line[i+1:]
			}
			if line == nil {
				continue
			}
			if i := bytes.IndexByte(line, ','); i >= 0 {
				line = line[:i]
			}
			fn(line)
		}
		ck.Put(c.Buf)
		if ck.Drained() {
			return nil
		}
		var err error
		c, err = ck.Next(nil)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		pos = 0
	}
}
