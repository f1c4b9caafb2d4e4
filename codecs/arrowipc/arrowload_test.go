package arrowipc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
)

// The zero-copy loader gives the records Arrow's reader gives, in both IPC
// formats (compressed files go through Arrow's reader), and its column
// buffers are slices of the file's bytes. (schemas'
// TestArrowZeroCopyMatchesReader checks the validated rows and dead
// letters of both paths.)
func TestZeroCopyAliasesFile(t *testing.T) {
	t.Parallel()
	// Go-allocated: Arrow's writers keep a dictionary they never release.
	a, b := arrowipctest.Record(t, arrowipctest.Schema(), 500, memory.NewGoAllocator()), arrowipctest.Record(t, arrowipctest.Schema(), 70, memory.NewGoAllocator())
	defer a.Release()
	defer b.Release()
	dir := t.TempDir()
	for _, tc := range arrowipctest.FileCases(a, b) {
		path := filepath.Join(dir, tc.Name+".arrow")
		arrowipctest.WriteFile(t, path, tc.Stream, tc.Recs, tc.Opts...)
		got, err := readAll(t, path, true)
		if err != nil {
			t.Fatalf("%s: zero-copy: %v", tc.Name, err)
		}
		want, err := readAll(t, path, false)
		if err != nil {
			t.Fatalf("%s: Arrow's reader: %v", tc.Name, err)
		}
		if len(got) != len(tc.Recs) || len(want) != len(tc.Recs) {
			t.Fatalf("%s: %d and %d batches, want %d", tc.Name, len(got), len(want), len(tc.Recs))
		}
		for i := range got {
			if !array.RecordEqual(got[i], want[i]) || !array.RecordEqual(got[i], tc.Recs[i]) {
				t.Fatalf("%s: batch %d differs between the loaders or from what was written", tc.Name, i)
			}
			got[i].Release()
			want[i].Release()
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		region := data
		if !tc.Stream {
			footer := int(int32(uint32(data[len(data)-10]) | uint32(data[len(data)-9])<<8 | uint32(data[len(data)-8])<<16 | uint32(data[len(data)-7])<<24))
			region = data[8 : len(data)-10-footer]
		}
		z, err := newZCRecords(region)
		if !tc.ZeroCopy {
			if !errors.Is(err, errZCUnsupported) {
				t.Fatalf("%s: newZCRecords: %v, want errZCUnsupported", tc.Name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: newZCRecords: %v", tc.Name, err)
		}
		lo, hi := uintptr(unsafe.Pointer(&region[0])), uintptr(unsafe.Pointer(&region[0]))+uintptr(len(region))
		nbuf := 0
		for z.Next() {
			for c, col := range z.Record().Columns() {
				d := col.Data()
				if col.DataType().ID() == arrow.DICTIONARY {
					d = col.Data().Dictionary()
					for _, buf := range col.Data().Buffers() {
						nbuf += checkAliases(t, tc.Name, c, buf, lo, hi)
					}
				}
				for _, buf := range d.Buffers() {
					nbuf += checkAliases(t, tc.Name, c, buf, lo, hi)
				}
			}
		}
		z.Release()
		if z.Err() != nil || nbuf < 10 {
			t.Fatalf("%s: %v after %d buffers checked", tc.Name, z.Err(), nbuf)
		}
	}
}

func checkAliases(t *testing.T, name string, col int, buf *memory.Buffer, lo, hi uintptr) int {
	t.Helper()
	if buf == nil || buf.Len() == 0 {
		return 0
	}
	p := uintptr(unsafe.Pointer(&buf.Bytes()[0]))
	if p < lo || p+uintptr(buf.Len()) > hi {
		t.Fatalf("%s: column %d has a buffer outside the file's bytes", name, col)
	}
	return 1
}
