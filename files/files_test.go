package files_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/files"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/schemas/schemastest"
)

// checkedValidator is a validator over a checked allocator that must be
// empty when the test ends.
func checkedValidator(t *testing.T) (*schemas.Validator, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	v, err := schemas.NewValidator(schemas.Spec{Cohorts: []string{"a", "b"}, TimeUnit: "days"}, mem)
	if err != nil {
		t.Fatal(err)
	}
	return v, mem
}

// Rows:        0 good, 1 unknown cohort | 2 good, 3 duplicate of 0 | 4 good.
const fiveRows = "id,time,event,cohort\np1,5,1,a\np2,6,0,zz\np3,7,1,b\np1,8,1,a\np5,9,0,b\n"

// The source yields one message per batch, positioned by the file's base
// name and the batch number; Decode hands over each batch once, with row
// indices over the whole file and duplicate ids found across batches; the
// end of input comes only once every batch is acknowledged.
func TestSourceBatchesDecodeAndEnd(t *testing.T) {
	v, _ := checkedValidator(t)
	src, err := files.NewSource(schemastest.WriteFile(t, "in.csv", fiveRows), v, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	ctx := context.Background()
	wantRows := []int{1, 1, 1}
	wantDead := [][]string{{"unknown_cohort@1"}, {"duplicate_id@3"}, nil}
	var acks []message.AckFunc
	for i := range 3 {
		b, err := src.ReadBatch(ctx)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if len(b.Messages) != 1 || b.Messages[0].Topic != "in.csv" || b.Messages[0].Partition != 0 || b.Messages[0].Offset != int64(i) {
			t.Fatalf("batch %d: messages %+v, want one at in.csv/0/%d", i, b.Messages, i)
		}
		good, dead := src.Decode(b.Messages[0])
		var got []string
		for _, d := range dead {
			got = append(got, d.Reason+"@"+strconv.Itoa(d.RowIndex))
		}
		if int(good.NumRows()) != wantRows[i] || strings.Join(got, ",") != strings.Join(wantDead[i], ",") {
			t.Errorf("batch %d: %d good rows, dead %v; want %d and %v", i, good.NumRows(), got, wantRows[i], wantDead[i])
		}
		good.Release()
		if again, dead := src.Decode(b.Messages[0]); again.NumRows() != 0 || len(dead) != 1 || dead[0].Reason != "unprocessable" || dead[0].RowIndex != -1 {
			t.Errorf("batch %d decoded twice: %d rows, dead %+v; want none and one unprocessable dead letter", i, again.NumRows(), dead)
			again.Release()
		} else {
			again.Release()
		}
		acks = append(acks, b.Ack)
	}
	if e := src.Empty(); e == nil || e.NumRows() != 0 || e.Schema().Field(0).Name != "id" {
		t.Errorf("empty record %v, want a zero-row canonical one", e)
	} else {
		e.Release()
	}
	// Two of three acknowledged: no end of input yet.
	for _, a := range acks[:2] {
		if err := a(ctx); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := src.ReadBatch(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read with a batch unacknowledged = %v, want to wait (deadline exceeded)", err)
	}
	if err := acks[2](ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ReadBatch(ctx); !errors.Is(err, message.ErrEndOfInput) {
		t.Fatalf("read after the last ack = %v, want end of input", err)
	}
}

// A read error is fatal (retrying a missing or corrupt file cannot help);
// an unknown extension is refused at once.
func TestSourceErrors(t *testing.T) {
	v, _ := checkedValidator(t)
	src, err := files.NewSource(filepath.Join(t.TempDir(), "missing.csv"), v, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.ReadBatch(context.Background())
	if !errors.Is(err, message.ErrFatal) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a missing file = %v, want fatal and not-exist", err)
	}
	if _, err := files.NewSource("x.parquet", v, 10); err == nil || !strings.Contains(err.Error(), "unknown extension") {
		t.Fatalf("unknown extension: %v", err)
	}
}

// Close stops the reader and releases every batch not handed over (the
// checked allocator ends empty).
func TestSourceCloseReleases(t *testing.T) {
	v, _ := checkedValidator(t)
	src, err := files.NewSource(schemastest.WriteFile(t, "in.csv", fiveRows), v, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.ReadBatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func record(t *testing.T, mem memory.Allocator, ids []string, times []float64) arrow.Record {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "time", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(ids, nil)
	b.Field(1).(*array.Float64Builder).AppendValues(times, nil)
	return b.NewRecord()
}

func ipcMessage(t *testing.T, rec arrow.Record) message.Message {
	t.Helper()
	b, err := arrowipc.Encode(rec, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return message.Message{Value: b}
}

// RecordSink decodes each message and appends its records, renamed, to
// the file; Ensure writes only when nothing was; undecodable bytes are a
// fatal error.
func TestRecordSink(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	s := files.NewRecordSink(path, map[string]string{"id": "patient"}, mem)
	r1, r2 := record(t, mem, []string{"a", "b"}, []float64{1, 2.5}), record(t, mem, []string{"c"}, []float64{3})
	defer r1.Release()
	defer r2.Release()
	ctx := context.Background()
	if err := s.Write(ctx, []message.Message{ipcMessage(t, r1), ipcMessage(t, r2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Ensure(r1); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []message.Message{{Value: []byte("not arrow")}}); !errors.Is(err, message.ErrFatal) {
		t.Errorf("undecodable message: %v, want fatal", err)
	}
	if s.Rows() != 3 {
		t.Errorf("rows %d, want 3", s.Rows())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "patient,time\na,1\nb,2.5\nc,3\n"; string(got) != want {
		t.Errorf("file %q, want %q", got, want)
	}

	empty := files.NewRecordSink(filepath.Join(dir, "empty.csv"), nil, mem)
	none := record(t, mem, nil, nil)
	defer none.Release()
	if err := empty.Ensure(none); err != nil {
		t.Fatal(err)
	}
	if err := empty.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "empty.csv")); string(got) != "id,time\n" {
		t.Errorf("empty output %q, want the header only", got)
	}
	unused := files.NewRecordSink(filepath.Join(dir, "unused.csv"), nil, mem)
	if err := unused.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "unused.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a sink never written left a file (%v)", err)
	}
}

// LineSink creates its file (owner-only: dead letters hold raw records)
// on the first write only, one line per message; an unwritable path is
// fatal.
func TestLineSink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dl.jsonl")
	s := files.NewLineSink(path)
	if s.Opened() {
		t.Fatal("opened before a write")
	}
	ctx := context.Background()
	if err := s.Write(ctx, []message.Message{{Value: []byte(`{"a":1}`)}, {Value: []byte(`{"b":2}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []message.Message{{Value: []byte(`{"c":3}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !s.Opened() || s.Lines() != 3 {
		t.Errorf("opened %v, lines %d; want true, 3", s.Opened(), s.Lines())
	}
	got, _ := os.ReadFile(path)
	if want := "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"; string(got) != want {
		t.Errorf("file %q, want %q", got, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	again := files.NewLineSink(path)
	if err := again.Write(ctx, []message.Message{{Value: []byte("new")}}); err != nil {
		t.Fatal(err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Errorf("rewritten file %q, want the old content replaced", got)
	}
	bad := files.NewLineSink(filepath.Join(dir, "no", "such", "dir.jsonl"))
	if err := bad.Write(ctx, []message.Message{{Value: []byte("x")}}); !errors.Is(err, message.ErrFatal) {
		t.Errorf("unwritable path: %v, want fatal", err)
	}
	if err := bad.Close(); err != nil {
		t.Errorf("close after a failed open: %v", err)
	}
}
