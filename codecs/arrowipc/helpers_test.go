package arrowipc

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// checkedMem returns a checked allocator that must be back at zero when the
// test ends.
func checkedMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// testRecord is an n-row record of the tte.v1 shape (id, time with nulls,
// event, a dictionary cohort, age): the flat column types the zero-copy
// loader handles.
func testRecord(t testing.TB, n int, mem memory.Allocator) arrow.Record {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "cohort", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
		{Name: "age", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("p%d", i%(n-n/10)))
		if i%17 == 5 {
			b.Field(1).(*array.Float64Builder).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(float64(i%300) - float64(i%23/22))
		}
		b.Field(2).(*array.BooleanBuilder).Append(i%3 == 0)
		if err := b.Field(3).(*array.BinaryDictionaryBuilder).AppendString([]string{"1", "2", "control", "x"}[i%4]); err != nil {
			t.Fatal(err)
		}
		b.Field(4).(*array.Float64Builder).Append(40 + float64(i%50))
	}
	return b.NewRecord()
}

// writeArrowFile writes recs to path with the given IPC writer options.
func writeArrowFile(t testing.TB, path string, stream bool, recs []arrow.Record, opts ...ipc.Option) {
	t.Helper()
	var buf bytes.Buffer
	opts = append(opts, ipc.WithSchema(recs[0].Schema()))
	if stream {
		w := ipc.NewWriter(&buf, opts...)
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
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
