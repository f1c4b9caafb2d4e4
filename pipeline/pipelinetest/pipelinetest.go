package pipelinetest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// Cohorts are the cohort labels of RowsMessage.
var Cohorts = []string{"rel-a", "rel-b"}

// Key is a fixed PRF key for tests.
var Key = bytes.Repeat([]byte{0x17}, 32)

// TimeConfig is the TE-Sanitizer configuration the tests use.
func TimeConfig() sanitizers.TimeConfig {
	return sanitizers.TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10}
}

// RowsMessage is an Arrow message of valid rows with the given ids, with a
// site column when site is set.
func RowsMessage(t testing.TB, ids []string, site bool) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	fields := []arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "cohort", Type: arrow.BinaryTypes.String, Nullable: true},
	}
	if site {
		fields = append(fields, arrow.Field{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Float64Builder).Append(float64(1 + i%3000))
		b.Field(2).(*array.BooleanBuilder).Append(i%3 == 0)
		b.Field(3).(*array.StringBuilder).Append(Cohorts[i%2])
		if site {
			b.Field(4).(*array.StringBuilder).Append("north")
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	v, err := arrowipc.Encode(rec, mem)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// SeqIDs is n ids: prefix and a six-digit sequence number.
func SeqIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%06d", prefix, i)
	}
	return ids
}

// NegativeNullCountMessage is the crash class the fuzzing found:
// a well-formed Arrow IPC message of n rows whose record-batch metadata
// declares a negative null count on the `event` column. The Arrow reader
// then loads an (empty) validity bitmap, validation used to see no nulls
// and pass the column through, and the encoder's null count over the short
// bitmap panicked (index out of range).
func NegativeNullCountMessage(t testing.TB, spec schemas.Spec, idPrefix string, n int) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	rec := InputRecord(t, spec, n, func(i int) string { return fmt.Sprintf("%s%d", idPrefix, i) }, func(i int) float64 { return float64(10 + i) }, mem)
	defer rec.Release()
	b, err := arrowipc.Encode(rec, mem)
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

// InputRecord is an n-row record of spec's input columns: row i has the
// id id(i), the time time(i), an event on even rows and the cohort
// spec.Cohorts[i % len(spec.Cohorts)]. The caller releases it.
func InputRecord(t testing.TB, spec schemas.Spec, n int, id func(int) string, time func(int) float64, mem memory.Allocator) arrow.Record {
	t.Helper()
	ids := make([]string, n)
	times := make([]float64, n)
	events := make([]bool, n)
	cohorts := make([]string, n)
	for i := range ids {
		ids[i] = id(i)
		times[i] = time(i)
		events[i] = i%2 == 0
		cohorts[i] = spec.Cohorts[i%len(spec.Cohorts)]
	}
	rec, err := schemas.BuildInput(spec, ids, times, events, cohorts, nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// DeadLetterJSON is the dead-letter message as the tests read it: the dead
// letter and the source position the route appends.
type DeadLetterJSON struct {
	schemas.DeadLetterWire
	Source map[string]any `json:"source"`
}

// Metric is the sum of the series of the named counter or gauge in reg
// whose labels include labels (nil: every series); NaN when reg cannot be
// gathered.
func Metric(reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return math.NaN()
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			if m.GetCounter() != nil {
				sum += m.GetCounter().GetValue()
			} else {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// Value is the value of a counter or gauge (-1 if it cannot be read).
func Value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}
