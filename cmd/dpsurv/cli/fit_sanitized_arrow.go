package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"

	"github.com/dpsurv/dpsurv/schemas"
)

// readSanitizedArrow reads the time, event and cohort columns of a
// sanitized Arrow file or stream (as `dpsurv sanitize` and the sanitized
// topic write them: time int64, event bool, cohort a string dictionary),
// which the input validator refuses (its time is float64). A row with a
// null, or a label outside labels, is counted in Dead, not used.
func readSanitizedArrow(path string, labels []string, cols schemas.Columns) (d fileData, err error) {
	d = fileData{Labels: labels, Dead: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return d, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read %s: corrupt arrow input: %v", path, p)
		}
	}()
	index := make(map[string]int32, len(labels))
	for i, l := range labels {
		index[l] = int32(i)
	}
	add := func(r arrow.Record) error {
		sc := r.Schema()
		get := func(name string) arrow.Array {
			if idx := sc.FieldIndices(name); len(idx) > 0 {
				return r.Column(idx[0])
			}
			return nil
		}
		tc, ec, cc := get(cols.Time), get(cols.Event), get(cols.Cohort)
		if tc == nil || ec == nil || cc == nil {
			return fmt.Errorf("sanitized arrow input needs columns %q, %q and %q", cols.Time, cols.Event, cols.Cohort)
		}
		ev, ok := ec.(*array.Boolean)
		if !ok {
			return fmt.Errorf("column %q: want bool, got %s", cols.Event, ec.DataType())
		}
		label := func(i int) (string, bool) {
			switch a := cc.(type) {
			case *array.Dictionary:
				s, ok := a.Dictionary().(*array.String)
				if !ok {
					return "", false
				}
				return s.Value(a.GetValueIndex(i)), true
			case *array.String:
				return a.Value(i), true
			}
			return "", false
		}
		for i := 0; i < int(r.NumRows()); i++ {
			if tc.IsNull(i) || ec.IsNull(i) || cc.IsNull(i) {
				d.Dead["null_field"]++
				continue
			}
			var t float64
			switch a := tc.(type) {
			case *array.Int64:
				t = float64(a.Value(i))
			case *array.Float64:
				t = a.Value(i)
			default:
				return fmt.Errorf("column %q: want int64 or float64, got %s", cols.Time, tc.DataType())
			}
			l, ok := label(i)
			if !ok {
				return fmt.Errorf("column %q: want strings, got %s", cols.Cohort, cc.DataType())
			}
			k, ok := index[l]
			if !ok {
				d.Dead["unknown_cohort"]++
				continue
			}
			if t < 0 {
				d.Dead["negative_time"]++
				continue
			}
			d.Time = append(d.Time, t)
			d.Event = append(d.Event, ev.Value(i))
			d.Cohort = append(d.Cohort, k)
		}
		return nil
	}
	magic := make([]byte, 6)
	n, _ := io.ReadFull(f, magic)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return d, fmt.Errorf("read %s: %w", path, err)
	}
	if n == 6 && string(magic) == "ARROW1" {
		fr, err := ipc.NewFileReader(f)
		if err != nil {
			return d, fmt.Errorf("read %s: %w", path, err)
		}
		defer fr.Close()
		for i := 0; i < fr.NumRecords(); i++ {
			r, err := fr.Record(i)
			if err != nil {
				return d, fmt.Errorf("read %s: %w", path, err)
			}
			if err := add(r); err != nil {
				return d, fmt.Errorf("read %s: %w", path, err)
			}
		}
	} else {
		sr, err := ipc.NewReader(bufio.NewReader(f))
		if err != nil {
			return d, fmt.Errorf("read %s: %w", path, err)
		}
		defer sr.Release()
		for sr.Next() {
			if err := add(sr.Record()); err != nil {
				return d, fmt.Errorf("read %s: %w", path, err)
			}
		}
		if err := sr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return d, fmt.Errorf("read %s: %w", path, err)
		}
	}
	return d, nil
}
