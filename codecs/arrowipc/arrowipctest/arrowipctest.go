// Package arrowipctest writes the Arrow IPC files and records the tests of
// codecs/arrowipc and of schemas' file reader share. It depends on Arrow
// only.
package arrowipctest

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

// Schema is a schema of the tte.v1 shape (id, time, event, cohort
// dictionary, age) without metadata.
func Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "cohort", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
		{Name: "age", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
}

// Record is an n-row record of schema, which has the columns of Schema
// (any names and metadata: schemas.InputSchema of a spec with one
// covariate fits), with what a validator refuses among its rows (negative
// and null times, an unknown cohort "x", repeated ids): the flat column
// types the zero-copy loader handles.
func Record(t testing.TB, schema *arrow.Schema, n int, mem memory.Allocator) arrow.Record {
	t.Helper()
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

// WriteFile writes recs to path, an IPC stream or an IPC file, with the
// given IPC writer options.
func WriteFile(t testing.TB, path string, stream bool, recs []arrow.Record, opts ...ipc.Option) {
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

// CheckedMem returns a checked allocator that must be back at zero when the
// test ends.
func CheckedMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// FileCase is one IPC file the loaders are checked on: its name, its
// format (stream or file), whether the zero-copy loader takes it without a
// copy, the writer's options and the records WriteFile writes.
type FileCase struct {
	Name     string
	Stream   bool
	ZeroCopy bool
	Opts     []ipc.Option
	Recs     []arrow.Record
}

// FileCases are the files of records a and b that the zero-copy loader and
// Arrow's reader must read alike: both formats uncompressed (loaded without
// a copy) and compressed (LZ4, Zstd: through Arrow's reader).
func FileCases(a, b arrow.Record) []FileCase {
	return []FileCase{
		{"file", false, true, nil, []arrow.Record{a, b}},
		{"stream", true, true, nil, []arrow.Record{a, b, a}},
		{"file-lz4", false, false, []ipc.Option{ipc.WithLZ4()}, []arrow.Record{a}},
		{"stream-zstd", true, false, []ipc.Option{ipc.WithZstd()}, []arrow.Record{b, a}},
	}
}
