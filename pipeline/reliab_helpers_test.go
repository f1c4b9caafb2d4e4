package pipeline_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/schemas"
)

// negativeNullCountMessage is the crash class the fuzzing found:
// a well-formed Arrow IPC message of n rows whose record-batch metadata
// declares a negative null count on the `event` column. The Arrow reader
// then loads an (empty) validity bitmap, validation used to see no nulls
// and pass the column through, and the encoder's null count over the short
// bitmap panicked (index out of range).
func negativeNullCountMessage(t testing.TB, spec schemas.Spec, idPrefix string, n int) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	ids := make([]string, n)
	times := make([]float64, n)
	events := make([]bool, n)
	cohorts := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", idPrefix, i)
		times[i] = float64(10 + i)
		events[i] = i%2 == 0
		cohorts[i] = spec.Cohorts[i%len(spec.Cohorts)]
	}
	rec, err := schemas.BuildInput(spec, ids, times, events, cohorts, nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	b, err := schemas.EncodeIPC(rec, mem)
	if err != nil {
		t.Fatal(err)
	}
	// The FieldNode structs (length int64, null_count int64) of id, time,
	// event and cohort are contiguous in the record batch metadata.
	node := make([]byte, 16)
	binary.LittleEndian.PutUint64(node, uint64(n))
	pattern := bytes.Repeat(node, 4)
	at := bytes.Index(b, pattern)
	if at < 0 || bytes.Contains(b[at+1:], pattern) {
		t.Fatalf("field nodes not found exactly once in the %d-byte message", len(b))
	}
	out := bytes.Clone(b)
	binary.LittleEndian.PutUint64(out[at+2*16+8:], uint64(0xFFFFFFFFFFFFFFF9)) // event: null_count -7
	return out
}
