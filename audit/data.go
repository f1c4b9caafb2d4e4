package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/csvrec"
	"github.com/dpsurv/dpsurv/schemas"
)

// maxAuditTime bounds the integer times the audit handles (2^53: exact in
// float64).
const maxAuditTime = 1 << 53

// Data is a time-to-event dataset held in memory for auditing. Times are
// integers in the public unit (TE-Sanitizer works on integer units: the
// sanitizer rounds, so does the audit).
type Data struct {
	// Cohorts is the public label list; Cohort[i] indexes it.
	Cohorts []string
	// ID is optional (nil when unknown); used only to join records.
	ID     []string
	Time   []int64
	Event  []bool
	Cohort []int
}

// Len returns the number of records.
func (d Data) Len() int { return len(d.Time) }

// Validate checks lengths, cohort codes and times.
func (d Data) Validate() error {
	n := len(d.Time)
	if len(d.Event) != n || len(d.Cohort) != n || (d.ID != nil && len(d.ID) != n) {
		return fmt.Errorf("audit data: column lengths differ (time %d, event %d, cohort %d, id %d)", n, len(d.Event), len(d.Cohort), len(d.ID))
	}
	if len(d.Cohorts) == 0 {
		return errors.New("audit data: no cohort labels")
	}
	for i := range n {
		if d.Cohort[i] < 0 || d.Cohort[i] >= len(d.Cohorts) {
			return fmt.Errorf("audit data: row %d: cohort code out of range", i)
		}
		if d.Time[i] < 0 || d.Time[i] > maxAuditTime {
			return fmt.Errorf("audit data: row %d: time out of range", i)
		}
	}
	return nil
}

// ByCohort returns the row indices of each cohort.
func (d Data) ByCohort() [][]int {
	out := make([][]int, len(d.Cohorts))
	for i, c := range d.Cohort {
		out[c] = append(out[c], i)
	}
	return out
}

// FloatTimes returns the times as float64 (for the survival package).
func (d Data) FloatTimes() []float64 { return floatTimes(d.Time) }

// floatTimes returns the times as float64 (for the survival package).
func floatTimes(t []int64) []float64 {
	out := make([]float64, len(t))
	for i, v := range t {
		out[i] = float64(v)
	}
	return out
}

// ReadStats counts what ReadFile saw.
type ReadStats struct {
	Records      int            `json:"records"`
	DeadLettered int            `json:"dead_lettered"`
	Reasons      map[string]int `json:"dead_letter_reasons,omitempty"`
	// RoundedTimes counts non-integer times rounded to the nearest unit.
	RoundedTimes int `json:"rounded_times"`
}

// ReadFile reads a CSV, Arrow IPC or JSON-lines file through the schema
// validator (the same decoding as `dpsurv sanitize`). spec.Cohorts must list
// the labels (see ScanLabels); rows the validator rejects are counted in the
// stats, not returned. Arrow files of the sanitized schema
// (tte.sanitized.v1) are accepted too: their columns have the input types
// the validator takes (int64 time, bool event, dictionary cohort).
func ReadFile(path string, spec schemas.Spec) (Data, ReadStats, error) {
	st := ReadStats{Reasons: map[string]int{}}
	v, err := schemas.NewValidator(spec, memory.DefaultAllocator)
	if err != nil {
		return Data{}, st, fmt.Errorf("audit read %s: %w", filepath.Base(path), err)
	}
	d := Data{Cohorts: append([]string(nil), spec.Cohorts...)}
	fn := func(good arrow.Record, dead []schemas.DeadLetter) error {
		for _, dl := range dead {
			st.DeadLettered++
			st.Reasons[dl.Reason]++
		}
		n := int(good.NumRows())
		if n == 0 {
			return nil
		}
		ids, ok1 := good.Column(schemas.ColID).(*array.String)
		times, ok2 := good.Column(schemas.ColTime).(*array.Float64)
		events, ok3 := good.Column(schemas.ColEvent).(*array.Boolean)
		coh, ok4 := good.Column(schemas.ColCohort).(*array.Dictionary)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return errors.New("unexpected canonical layout")
		}
		codes, ok := coh.Indices().(*array.Int32)
		if !ok {
			return errors.New("unexpected cohort index type")
		}
		for i := range n {
			t := times.Value(i)
			r := math.Round(t)
			if r != t {
				st.RoundedTimes++
			}
			if !(r >= 0 && r <= maxAuditTime) {
				return fmt.Errorf("row %d: time out of range", st.Records+i)
			}
			d.ID = append(d.ID, ids.Value(i))
			d.Time = append(d.Time, int64(r))
			d.Event = append(d.Event, events.Value(i))
			d.Cohort = append(d.Cohort, int(codes.Value(i)))
		}
		st.Records += n
		return nil
	}
	if err := readThrough(path, v, fn); err != nil {
		return Data{}, st, fmt.Errorf("audit read %s: %w", filepath.Base(path), err)
	}
	return d, st, nil
}

// ScanLabels returns the distinct values of column in a CSV, Arrow IPC or
// JSON-lines file: in numeric order when every label is an integer, else
// sorted as strings. It is for the auditor's non-private path, where the
// original file may define the label list; a private path must take the
// list from configuration.
func ScanLabels(path, column string) ([]string, error) {
	format, err := schemas.FormatFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("scan labels: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scan labels: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	switch format {
	case schemas.FormatCSV:
		err = scanCSV(f, column, seen)
	case schemas.FormatJSONLines:
		err = scanJSONLines(f, column, seen)
	default:
		err = scanArrow(f, column, seen)
	}
	if err != nil {
		return nil, fmt.Errorf("scan labels %s: %w", filepath.Base(path), err)
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("scan labels %s: no values in column %q", filepath.Base(path), column)
	}
	return sortLabels(seen), nil
}

func sortLabels(seen map[string]bool) []string {
	out := make([]string, 0, len(seen))
	numeric := true
	for s := range seen {
		out = append(out, s)
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			numeric = false
		}
	}
	if numeric {
		sort.Slice(out, func(i, j int) bool {
			a, _ := strconv.ParseInt(out[i], 10, 64)
			b, _ := strconv.ParseInt(out[j], 10, 64)
			return a < b
		})
	} else {
		sort.Strings(out)
	}
	return out
}

func scanCSV(r io.Reader, column string, seen map[string]bool) error {
	return csvrec.ScanColumn(r, column, func(cell []byte) {
		if s := bytes.TrimSpace(cell); len(s) > 0 && string(s) != "NA" && !seen[string(s)] {
			seen[string(s)] = true
		}
	})
}

func scanJSONLines(r io.Reader, column string, seen map[string]bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var row map[string]any
		if json.Unmarshal(line, &row) != nil {
			continue
		}
		switch v := row[column].(type) {
		case string:
			if v != "" {
				seen[v] = true
			}
		case float64:
			seen[strconv.FormatFloat(v, 'f', -1, 64)] = true
		}
	}
	return sc.Err()
}

func scanArrow(f *os.File, column string, seen map[string]bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow: corrupt file: %v", p)
		}
	}()
	return eachArrowRecord(f, func(rec arrow.Record) error {
		idx := rec.Schema().FieldIndices(column)
		if len(idx) == 0 {
			return fmt.Errorf("no column %q", column)
		}
		col := rec.Column(idx[0])
		for i := 0; i < col.Len(); i++ {
			if col.IsNull(i) {
				continue
			}
			seen[col.ValueStr(i)] = true
		}
		return nil
	})
}

// eachArrowRecord calls fn on every batch of an Arrow IPC file (file or
// stream format). The first call's schema is also what ArrowFieldMetadata
// reads.
func eachArrowRecord(f *os.File, fn func(arrow.Record) error) error {
	magic := make([]byte, 6)
	n, _ := io.ReadFull(f, magic)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	mem := memory.NewGoAllocator()
	if n == 6 && string(magic) == "ARROW1" {
		fr, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			return fmt.Errorf("arrow: %w", err)
		}
		defer fr.Close()
		for i := 0; i < fr.NumRecords(); i++ {
			rec, err := fr.RecordAt(i)
			if err != nil {
				return fmt.Errorf("arrow: batch %d: %w", i, err)
			}
			err = fn(rec)
			rec.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	sr, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<16), ipc.WithAllocator(mem))
	if err != nil {
		return fmt.Errorf("arrow: %w", err)
	}
	defer sr.Release()
	for sr.Next() {
		if err := fn(sr.Record()); err != nil {
			return err
		}
	}
	return sr.Err()
}

// ArrowFieldMetadata returns the field-level metadata of column in an Arrow
// IPC file's schema (the sanitized schema names each field's mechanism and
// parameters there: dpsurv.mechanism, dpsurv.epsilon, dpsurv.window, ...),
// and the schema-level metadata.
func ArrowFieldMetadata(path, column string) (field, schema map[string]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("arrow metadata: %w", err)
	}
	defer f.Close()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow metadata %s: corrupt file: %v", filepath.Base(path), p)
		}
	}()
	var sc *arrow.Schema
	magic := make([]byte, 6)
	n, _ := io.ReadFull(f, magic)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, fmt.Errorf("arrow metadata: %w", err)
	}
	if n == 6 && string(magic) == "ARROW1" {
		fr, err := ipc.NewFileReader(f)
		if err != nil {
			return nil, nil, fmt.Errorf("arrow metadata %s: %w", filepath.Base(path), err)
		}
		sc = fr.Schema()
		defer fr.Close()
	} else {
		sr, err := ipc.NewReader(bufio.NewReader(f))
		if err != nil {
			return nil, nil, fmt.Errorf("arrow metadata %s: %w", filepath.Base(path), err)
		}
		sc = sr.Schema()
		defer sr.Release()
	}
	schema = metaMap(sc.Metadata())
	idx := sc.FieldIndices(column)
	if len(idx) == 0 {
		return nil, schema, fmt.Errorf("arrow metadata %s: no field %q", filepath.Base(path), column)
	}
	return metaMap(sc.Field(idx[0]).Metadata), schema, nil
}

func metaMap(md arrow.Metadata) map[string]string {
	out := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		out[k] = md.Values()[i]
	}
	return out
}

// readThrough feeds a file to fn through the validator. CSV and JSON lines
// go through schemas.ReadFile; Arrow batches are validated one by one after
// dropping the schema-level metadata, because the validator accepts only
// input-schema (tte.v1) metadata and sanitized files carry
// tte.sanitized.v1.
func readThrough(path string, v *schemas.Validator, fn func(arrow.Record, []schemas.DeadLetter) error) (err error) {
	format, err := schemas.FormatFromPath(path)
	if err != nil {
		return err
	}
	if format == schemas.FormatCSV || format == schemas.FormatJSONLines {
		return schemas.ReadFile(path, v, 8192, fn)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow: corrupt file: %v", p)
		}
	}()
	return eachArrowRecord(f, func(rec arrow.Record) error {
		bare := array.NewRecord(arrow.NewSchema(rec.Schema().Fields(), nil), rec.Columns(), rec.NumRows())
		defer bare.Release()
		good, dead := v.Validate(bare)
		defer good.Release()
		return fn(good, dead)
	})
}
