package schemastest

import (
	"bytes"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Encode is rec as one Arrow IPC stream message (its schema, then the
// batch), written with mem and the extra writer options (compression,
// dictionary deltas).
func Encode(t testing.TB, rec arrow.Record, mem memory.Allocator, opts ...ipc.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, append([]ipc.Option{ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem)}, opts...)...)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
