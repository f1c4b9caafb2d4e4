package schemas

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Issue 21, defect 2: the input shapes whose decoded form outgrew their
// bytes on the wire. Each generator builds a message as a hostile or
// careless producer would; TestAdversarialAllocationBounded measures the
// bytes allocated to decode, validate and render the dead letters of each
// (runtime.MemStats.TotalAlloc, an upper bound of the heap the message
// costs) and bounds them by a multiple of the wire bytes.

// advDictMessage is an Arrow message of n rows (ids "p<i>", time i%100,
// event i%2, cohort label) plus an extra column name of type
// dictionary<int32, utf8> whose dictionary is dict and whose rows all point
// at entry idx(i).
func advDictMessage(t testing.TB, n int, label, name string, dict []string, idx func(int) int, opts ...ipc.Option) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "time", Type: arrow.PrimitiveTypes.Float64},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "cohort", Type: arrow.BinaryTypes.String},
		{Name: name, Type: dt},
	}, nil)
	ib := array.NewStringBuilder(mem)
	tb := array.NewFloat64Builder(mem)
	eb := array.NewBooleanBuilder(mem)
	cb := array.NewStringBuilder(mem)
	xb := array.NewInt32Builder(mem)
	for i := range n {
		ib.Append(fmt.Sprintf("p%d", i))
		tb.Append(float64(i % 100))
		eb.Append(i%2 == 0)
		cb.Append(label)
		xb.Append(int32(idx(i)))
	}
	db := array.NewStringBuilder(mem)
	db.AppendValues(dict, nil)
	dv := db.NewArray()
	ix := xb.NewArray()
	site := array.NewDictionaryArray(dt, ix, dv)
	cols := []arrow.Array{ib.NewArray(), tb.NewArray(), eb.NewArray(), cb.NewArray(), site}
	rec := array.NewRecord(schema, cols, int64(n))
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, append([]ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(mem)}, opts...)...)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The cases.
func advSiteDict(t testing.TB) []byte { // 175 KB, one 61,440-byte entry, 20,000 rows
	return advDictMessage(t, 20_000, "1", "site", []string{strings.Repeat("s", 61_440)}, func(int) int { return 0 })
}

func advDeadDict(t testing.TB) []byte { // 100 unknown-cohort rows, a 900 KB value in an unused column
	return advDictMessage(t, 100, "unknown", "note", []string{strings.Repeat("n", 900_000)}, func(int) int { return 0 }, ipc.WithZstd())
}

func advHugeDict(t testing.TB) []byte { // a dictionary of 60 million entries, zstd
	return advDictMessage(t, 1000, "1", "note", make([]string, 60_000_000), func(i int) int { return i }, ipc.WithZstd())
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func TestAdversarialMeasure(t *testing.T) {
	spec := Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days"}
	for _, c := range []struct {
		name string
		msg  func(testing.TB) []byte
	}{{"site-dict", advSiteDict}, {"dead-dict", advDeadDict}, {"huge-dict", advHugeDict}, {"huge-cohort-dict", advHugeCohortDict}} {
		msg := c.msg(t)
		v := newTestValidator(t, spec, memory.NewGoAllocator())
		v.SetMaxDeadRows(100)
		v.SetMaxDecodeBytes(64 << 20)
		var dl int
		a := allocated(func() {
			out, dead := v.DecodeIPC(msg)
			out.Release()
			for _, d := range dead {
				b, _ := d.MarshalJSON()
				dl += len(b)
			}
			t.Logf("%s: %d rows out, %d dead", c.name, out.NumRows(), len(dead))
		})
		t.Logf("%s: wire %d bytes, allocated %d (%.0fx), dead letters %d bytes", c.name, len(msg), a, float64(a)/float64(len(msg)), dl)
	}
}

// advHugeCohortDict: the cohort column is dictionary<int32, int8> of 60
// million entries (60 MB decoded, inside the 64 MiB decode bound; zstd on
// the wire).
func advHugeCohortDict(t testing.TB) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	const n, entries = 1000, 60_000_000
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Int8}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "time", Type: arrow.PrimitiveTypes.Float64},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "cohort", Type: dt},
		{Name: "pad", Type: arrow.BinaryTypes.Binary},
	}, nil)
	ib := array.NewStringBuilder(mem)
	tb := array.NewFloat64Builder(mem)
	eb := array.NewBooleanBuilder(mem)
	xb := array.NewInt32Builder(mem)
	pb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	rng := rand.New(rand.NewPCG(1, 2))
	pad := make([]byte, 500)
	for i := range n {
		for k := range pad {
			pad[k] = byte(rng.Uint32())
		}
		pb.Append(pad) // incompressible: the message is 518 KB on the wire
		ib.Append(fmt.Sprintf("p%d", i))
		tb.Append(float64(i % 100))
		eb.Append(i%2 == 0)
		xb.Append(int32(i * (entries / n)))
	}
	vals := make([]int8, entries)
	for i := range vals {
		vals[i] = int8(1 + i%2)
	}
	db := array.NewInt8Builder(mem)
	db.AppendValues(vals, nil)
	dv := db.NewArray()
	ix := xb.NewArray()
	cols := []arrow.Array{ib.NewArray(), tb.NewArray(), eb.NewArray(), array.NewDictionaryArray(dt, ix, dv), pb.NewArray()}
	rec := array.NewRecord(schema, cols, n)
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd())
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
