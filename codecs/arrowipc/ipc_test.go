package arrowipc

import (
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
)

func TestDecodeRecordsErrors(t *testing.T) {
	t.Parallel()
	mem := arrowipctest.CheckedMem(t)
	if _, err := DecodeRecords([]byte("nope"), mem); err == nil {
		t.Error("no error for garbage")
	}
	if _, err := Encode(nil, mem); err == nil {
		t.Error("no error for nil record")
	}
}

// Encode then DecodeRecords gives the record back, with no memory left
// allocated.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	mem := arrowipctest.CheckedMem(t)
	in := arrowipctest.Record(t, arrowipctest.Schema(), 300, mem)
	defer in.Release()
	data, err := Encode(in, mem)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !array.RecordEqual(recs[0], in) {
		t.Fatalf("decoded %d records, want the one encoded", len(recs))
	}
	for _, r := range recs {
		r.Release()
	}
}

// The encoder's buffer is sized from ipcSizeHint: it must cover the
// stream (or the buffer regrows) without overshooting it (a slice of a
// large record counts only its own rows).
func TestIPCSizeHint(t *testing.T) {
	t.Parallel()
	mem := arrowipctest.CheckedMem(t)
	n := 3000
	in := arrowipctest.Record(t, arrowipctest.Schema(), n, mem)
	defer in.Release()
	for _, c := range []struct {
		name   string
		lo, hi int64
	}{{"whole", 0, int64(n)}, {"head", 0, 100}, {"middle", 1000, 1500}, {"one row", 2999, 3000}} {
		s := in.NewSlice(c.lo, c.hi)
		data, err := Encode(s, mem)
		if err != nil {
			t.Fatal(err)
		}
		got := len(data)
		hint := ipcSizeHint(s)
		s.Release()
		if hint < got || hint > 2*got+4096 {
			t.Errorf("%s: hint %d for a stream of %d bytes", c.name, hint, got)
		}
	}
}

// FuzzDecodeRecords: on any bytes, DecodeRecords returns records or an
// error and never panics; a decoded record that passes the checks
// encodes without a panic, and what it encodes to decodes to as many
// rows.
func FuzzDecodeRecords(f *testing.F) {
	mem := memory.NewGoAllocator()
	rec := arrowipctest.Record(f, arrowipctest.Schema(), 40, mem)
	defer rec.Release()
	for _, opts := range [][]ipc.Option{nil, {ipc.WithLZ4()}, {ipc.WithZstd()}} {
		var w bytesWriter
		iw := ipc.NewWriter(&w, append(opts, ipc.WithSchema(rec.Schema()))...)
		if err := iw.Write(rec); err != nil {
			f.Fatal(err)
		}
		if err := iw.Close(); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(w))
	}
	f.Add([]byte{})
	f.Add([]byte("ARROW1\x00\x00ARROW1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Untrusted input: a Go allocator (DecodeRecords may not return
		// an allocator's memory on its error path).
		recs, err := DecodeRecords(data, memory.NewGoAllocator())
		if err != nil {
			return
		}
		for _, r := range recs {
			if err := CheckLengths(r); err != nil {
				r.Release()
				continue
			}
			cols := make([]int, r.NumCols())
			for i := range cols {
				cols[i] = i
			}
			if err := CheckColumns(r, cols); err != nil {
				r.Release()
				continue
			}
			b, err := Encode(r, memory.NewGoAllocator())
			if err == nil {
				again, err := DecodeRecords(b, memory.NewGoAllocator())
				if err != nil || len(again) != 1 || again[0].NumRows() != r.NumRows() {
					t.Fatalf("a re-encoded record does not decode to its %d rows: %v", r.NumRows(), err)
				}
				again[0].Release()
			}
			r.Release()
		}
	})
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
