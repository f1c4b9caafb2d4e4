package schemas

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
)

// readCSVOracle is the encoding/csv + validateRaw reader that readCSV
// replaced, kept as the reference the fast reader is checked against.
func readCSVOracle(r io.Reader, v *Validator, batchSize int, fn func(arrow.Record, []DeadLetter) error) error {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return errors.New("no header")
	}
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\uFEFF")
	}
	cols := make(map[string]bool, len(header))
	dupCols := map[string]bool{}
	for _, h := range header {
		if cols[h] {
			dupCols[h] = true
		}
		cols[h] = true
	}
	dupUsed := ""
	for _, c := range v.slotNames() {
		if dupCols[c] {
			dupUsed = c
			break
		}
	}
	set := &idSet{m: make(map[string]int32), cross: true}
	rowBase := 0
	batch := &rawBatch{rowErr: map[int]rowFailure{}, present: func(c string) bool { return cols[c] }, nullish: csvNull}
	flush := func() error {
		if len(batch.rows) == 0 {
			return nil
		}
		out, dead := v.validateRaw(batch, rowBase, set)
		rowBase += len(batch.rows)
		batch.rows = batch.rows[:0]
		clear(batch.rowErr)
		return emit(out, dead, fn)
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		i := len(batch.rows)
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return fmt.Errorf("row %d: %w", rowBase+i, err)
			}
			batch.rows = append(batch.rows, nil)
			batch.rowErr[i] = rowFailure{reason: rUndecodable, detail: "csv: " + pe.Error()}
		} else {
			row := make(map[string]any, len(header))
			for k, h := range header {
				if k < len(rec) {
					row[h] = rec[k]
				}
			}
			batch.rows = append(batch.rows, row)
			if dupUsed != "" {
				batch.rowErr[i] = rowFailure{reason: rWrongSchema, row: row,
					detail: fmt.Sprintf("csv: column %q appears more than once in the header", dupUsed)}
			} else if len(rec) != len(header) {
				var raw bytes.Buffer
				w := csv.NewWriter(&raw)
				_ = w.Write(rec)
				w.Flush()
				batch.rowErr[i] = rowFailure{reason: rUndecodable, row: row, raw: raw.Bytes(),
					detail: fmt.Sprintf("csv: record has %d fields, header has %d", len(rec), len(header))}
			}
		}
		if len(batch.rows) == batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
