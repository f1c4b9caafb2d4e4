package schemas

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
)

// FileFormat is a file codec, chosen by extension.
type FileFormat int

const (
	FormatCSV         FileFormat = iota + 1 // .csv: header line, then one row per line
	FormatArrowFile                         // .arrow, .feather, .ipc: Arrow IPC file format (reading also accepts the stream format)
	FormatArrowStream                       // .arrows: Arrow IPC stream format
	FormatJSONLines                         // .jsonl, .ndjson, .json: one JSON object per line
)

func (f FileFormat) String() string {
	switch f {
	case FormatCSV:
		return "csv"
	case FormatArrowFile:
		return "arrow-file"
	case FormatArrowStream:
		return "arrow-stream"
	case FormatJSONLines:
		return "json-lines"
	}
	return "unknown"
}

// FormatFromPath picks the format by the (case-insensitive) extension.
func FormatFromPath(path string) (FileFormat, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return FormatCSV, nil
	case ".arrow", ".feather", ".ipc":
		return FormatArrowFile, nil
	case ".arrows":
		return FormatArrowStream, nil
	case ".jsonl", ".ndjson", ".json":
		return FormatJSONLines, nil
	}
	return 0, fmt.Errorf("schemas: file format of %q: unknown extension (want .csv, .arrow, .arrows, .ipc, .feather, .jsonl)", path)
}

// ReadFile streams a file through the validator in batches of at most
// batchSize rows, calling fn with the good rows (canonical; valid only during
// the call: ReadFile releases it afterwards, Retain to keep it) and the dead
// letters of each batch. RowIndex counts data rows from the start of the
// file, and duplicate ids are detected across the whole file (the id set
// grows with the file).
//
// CSV cells are parsed leniently ("" and NA are null), so a bad cell fails
// its row only; a record whose field count differs from the header is an
// undecodable dead letter with the record re-encoded in Raw. An error is
// returned only for I/O problems, a missing header, a corrupt Arrow file or
// an error from fn.
func ReadFile(path string, v *Validator, batchSize int, fn func(good arrow.Record, dead []DeadLetter) error) error {
	if v == nil {
		return errors.New("schemas: read file: nil validator")
	}
	if batchSize <= 0 {
		return fmt.Errorf("schemas: read file: batch size %d must be positive", batchSize)
	}
	format, err := FormatFromPath(path)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("schemas: read file: %w", err)
	}
	defer f.Close()
	switch format {
	case FormatCSV:
		var size int64
		if fi, serr := f.Stat(); serr == nil {
			size = fi.Size()
		}
		err = readCSV(f, size, v, batchSize, fn)
	case FormatJSONLines:
		err = readJSONLines(f, v, batchSize, fn)
	default:
		err = readArrow(f, v, batchSize, fn)
	}
	if err != nil {
		return fmt.Errorf("schemas: read file %s: %w", filepath.Base(path), err)
	}
	return nil
}

func emit(out arrow.Record, dead []DeadLetter, fn func(arrow.Record, []DeadLetter) error) error {
	defer out.Release()
	return fn(out, dead)
}

func readJSONLines(r io.Reader, v *Validator, batchSize int, fn func(arrow.Record, []DeadLetter) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	set := &idSet{file: newFileIDs(0)}
	rowBase := 0
	var lines [][]byte
	flush := func() error {
		if len(lines) == 0 {
			return nil
		}
		elems := make([]string, len(lines))
		for k, l := range lines {
			elems[k] = string(l)
		}
		b, _ := v.parseJSONRows(elems)
		out, dead := v.validateJSON(b, rowBase, set)
		rowBase += len(lines)
		lines = lines[:0]
		return emit(out, dead, fn)
	}
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if rowBase == 0 && len(lines) == 0 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		if len(line) == 0 {
			continue
		}
		lines = append(lines, append([]byte(nil), line...))
		if len(lines) == batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

// readArrow reads an Arrow IPC file (arrowipc.OpenFile) and validates
// its batches.
func readArrow(f *os.File, v *Validator, batchSize int, fn func(arrow.Record, []DeadLetter) error) error {
	return readArrowWith(f, v, batchSize, fn, true)
}

// readArrowWith is readArrow; zeroCopy false always takes Arrow's reader.
func readArrowWith(f *os.File, v *Validator, batchSize int, fn func(arrow.Record, []DeadLetter) error, zeroCopy bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow: corrupt file: %v", p)
		}
	}()
	sr, maxRows, err := arrowipc.OpenFile(f, zeroCopy)
	if err != nil {
		return err
	}
	defer sr.Release()
	return validateArrow(sr, v, batchSize, fn, maxRows)
}

// validateArrow validates the batches of sr in slices of batchSize rows;
// more than maxRows rows in all is an error.
func validateArrow(sr arrowipc.Records, v *Validator, batchSize int, fn func(arrow.Record, []DeadLetter) error, maxRows int64) error {
	set := &idSet{file: newFileIDs(0)}
	rowBase := 0
	for sr.Next() {
		rec := sr.Record()
		if err := arrowipc.CheckLengths(rec); err != nil {
			return fmt.Errorf("arrow: batch at row %d: %w", rowBase, err)
		}
		rows := rec.NumRows()
		if rows > maxRows {
			return fmt.Errorf("arrow: batch at row %d: %d rows are more than the file can hold", rowBase, rows)
		}
		maxRows -= rows
		for lo := int64(0); lo < rows; lo += int64(batchSize) {
			hi := min(lo+int64(batchSize), rows)
			chunk := rec.NewSlice(lo, hi)
			out, dead := v.validate(chunk, rowBase, set, false)
			chunk.Release()
			rowBase += int(hi - lo)
			if err := emit(out, dead, fn); err != nil {
				return err
			}
		}
	}
	if err := sr.Err(); err != nil {
		return fmt.Errorf("arrow: %w", err)
	}
	return nil
}

// FileWriter writes records of one schema to a CSV, Arrow IPC (file or
// stream) or JSON-lines file, chosen by extension.
type FileWriter struct {
	format  FileFormat
	schema  *arrow.Schema // the schema records must have
	out     *arrow.Schema // renamed schema (IPC output)
	names   []string      // renamed column names
	f       *os.File
	buf     *bufio.Writer
	csv     *csv.Writer
	stream  *ipc.Writer
	file    *ipc.FileWriter
	closed  bool
	scratch []string
}

// WriteFile writes rec as the whole file path (NewFileWriter: the format
// by path's extension, rename as there), then closes it.
func WriteFile(path string, rec arrow.Record, rename map[string]string, mem memory.Allocator) error {
	w, err := NewFileWriter(path, rec.Schema(), rename, mem)
	if err != nil {
		return err
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// NewFileWriter creates path and writes its header (CSV) or schema (IPC).
// rename maps schema field names to output column names (nil keeps them),
// so that an output keeps the input's column names. In CSV and JSON, bools
// are written as 0/1, dictionary columns as their string value, floats with
// strconv 'g' -1, timestamps as RFC 3339 (UTC, nanosecond precision) and
// nulls as empty cells (CSV) or null (JSON).
func NewFileWriter(path string, schema *arrow.Schema, rename map[string]string, mem memory.Allocator) (*FileWriter, error) {
	if schema == nil {
		return nil, errors.New("schemas: new file writer: nil schema")
	}
	format, err := FormatFromPath(path)
	if err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	names := make([]string, schema.NumFields())
	fields := make([]arrow.Field, schema.NumFields())
	seen := map[string]bool{}
	for i, fd := range schema.Fields() {
		names[i] = fd.Name
		if r, ok := rename[fd.Name]; ok && r != "" {
			names[i] = r
		}
		if seen[names[i]] {
			return nil, fmt.Errorf("schemas: new file writer: output column %q appears twice", names[i])
		}
		seen[names[i]] = true
		fields[i] = fd
		fields[i].Name = names[i]
	}
	md := schema.Metadata()
	out := arrow.NewSchema(fields, &md)
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("schemas: new file writer: %w", err)
	}
	w := &FileWriter{format: format, schema: schema, out: out, names: names, f: f}
	if format == FormatCSV || format == FormatJSONLines {
		// Text formats have no place for the schema metadata (the
		// mechanisms, epsilons and guarantees): it goes beside the file.
		if err := writeSidecar(path, out); err != nil {
			f.Close()
			return nil, fmt.Errorf("schemas: new file writer: %w", err)
		}
	}
	switch format {
	case FormatCSV:
		w.buf = bufio.NewWriterSize(f, 1<<16)
		w.csv = csv.NewWriter(w.buf)
		if err := w.csv.Write(names); err != nil {
			f.Close()
			return nil, fmt.Errorf("schemas: new file writer: header: %w", err)
		}
	case FormatJSONLines:
		w.buf = bufio.NewWriterSize(f, 1<<16)
	case FormatArrowStream:
		w.buf = bufio.NewWriterSize(f, 1<<16)
		w.stream = ipc.NewWriter(w.buf, ipc.WithSchema(out), ipc.WithAllocator(mem))
	case FormatArrowFile:
		fw, err := ipc.NewFileWriter(f, ipc.WithSchema(out), ipc.WithAllocator(mem))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("schemas: new file writer: %w", err)
		}
		w.file = fw
	}
	return w, nil
}

// Write appends rec, whose fields must match the writer's schema (names and
// types).
func (w *FileWriter) Write(rec arrow.Record) error {
	if w.closed {
		return errors.New("schemas: write file: writer is closed")
	}
	if err := sameFields(rec.Schema(), w.schema); err != nil {
		return fmt.Errorf("schemas: write file: %w", err)
	}
	switch w.format {
	case FormatCSV:
		return w.writeCSV(rec)
	case FormatJSONLines:
		return w.writeJSON(rec)
	}
	cols := rec.Columns()
	if w.file != nil {
		// Arrow's IPC FileWriter retains the last written dictionary of each
		// field and never releases it (v15); hand it a Go-allocated copy so
		// that the caller's allocator gets all its memory back.
		cols = append([]arrow.Array(nil), cols...)
		for c, col := range cols {
			if d, ok := col.(*array.Dictionary); ok {
				dict, err := array.Concatenate([]arrow.Array{d.Dictionary()}, memory.DefaultAllocator)
				if err != nil {
					return fmt.Errorf("schemas: write file: copy dictionary: %w", err)
				}
				cols[c] = array.NewDictionaryArray(d.DataType(), d.Indices(), dict)
				dict.Release()
				defer cols[c].Release()
			}
		}
	}
	renamed := array.NewRecord(w.out, cols, rec.NumRows())
	defer renamed.Release()
	var err error
	if w.stream != nil {
		err = w.stream.Write(renamed)
	} else {
		err = w.file.Write(renamed)
	}
	if err != nil {
		return fmt.Errorf("schemas: write file: %w", err)
	}
	return nil
}

func sameFields(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("record has %d fields, writer schema has %d", got.NumFields(), want.NumFields())
	}
	for i := range got.Fields() {
		g, w := got.Field(i), want.Field(i)
		if g.Name != w.Name || !arrow.TypeEqual(g.Type, w.Type) {
			return fmt.Errorf("field %d is %s %s, writer schema has %s %s", i, g.Name, g.Type, w.Name, w.Type)
		}
	}
	return nil
}

func (w *FileWriter) writeCSV(rec arrow.Record) error {
	fmts := make([]func(int) (string, bool), rec.NumCols())
	for c := range fmts {
		fmts[c] = textFormatter(rec.Column(c))
	}
	row := w.scratch[:0]
	for i := 0; i < int(rec.NumRows()); i++ {
		row = row[:0]
		for _, f := range fmts {
			s, _ := f(i)
			row = append(row, s)
		}
		if err := w.csv.Write(row); err != nil {
			return fmt.Errorf("schemas: write file: %w", err)
		}
	}
	w.scratch = row
	return nil
}

func (w *FileWriter) writeJSON(rec arrow.Record) error {
	obj := make(map[string]any, rec.NumCols())
	for i := 0; i < int(rec.NumRows()); i++ {
		for c := 0; c < int(rec.NumCols()); c++ {
			obj[w.names[c]] = jsonValue(rec.Column(c), i)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("schemas: write file: row %d: %w", i, err)
		}
		b = append(b, '\n')
		if _, err := w.buf.Write(b); err != nil {
			return fmt.Errorf("schemas: write file: %w", err)
		}
	}
	return nil
}

// jsonValue renders one cell for JSON output: bools as 0/1 (as in CSV),
// non-finite floats as strings.
func jsonValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return 1
		}
		return 0
	case *array.Float64:
		return finiteOrString(a.Value(i))
	case *array.Float32:
		return finiteOrString(float64(a.Value(i)))
	}
	v := cellValue(arr, i)
	return jsonSafe(v)
}

// textFormatter renders a column's cells as CSV text; ok is false for null.
func textFormatter(arr arrow.Array) func(int) (string, bool) {
	switch a := arr.(type) {
	case *array.Boolean:
		return cellStrings(a, func(v bool) string {
			if v {
				return "1"
			}
			return "0"
		})
	case *array.Float64:
		return cellStrings(a, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
	case *array.Float32:
		return cellStrings(a, func(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) })
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return cellStrings(a, func(v arrow.Timestamp) string { return v.ToTime(unit).UTC().Format(time.RFC3339Nano) })
	case *array.Dictionary:
		return dictStrings(a, textFormatter(a.Dictionary()))
	}
	if g := stringGetter(arr); isString(arr.DataType().ID()) || isInt(arr.DataType().ID()) {
		return g
	}
	return func(i int) (string, bool) {
		if arr.IsNull(i) {
			return "", false
		}
		return arr.ValueStr(i), true
	}
}

// Close flushes and closes the file (writing the IPC footer or end-of-stream
// marker).
func (w *FileWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	switch {
	case w.csv != nil:
		w.csv.Flush()
		errs = append(errs, w.csv.Error())
	case w.stream != nil:
		errs = append(errs, w.stream.Close())
	case w.file != nil:
		errs = append(errs, w.file.Close())
	}
	if w.buf != nil {
		errs = append(errs, w.buf.Flush())
	}
	errs = append(errs, w.f.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("schemas: close file: %w", err)
	}
	return nil
}
