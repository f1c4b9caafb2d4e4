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

	"github.com/dpsurv/dpsurv/internal/testtier"
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

// advJSON is a JSON-lines message of about size bytes: rows of the
// configured keys plus extra unconfigured keys per row (extra of them).
func advJSON(size, extra int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size-400; i++ {
		fmt.Fprintf(&b, `{"id":"p%06d","time":%d,"event":%d,"cohort":"1"`, i, i%1000, i%2)
		for k := range extra {
			fmt.Fprintf(&b, `,"x%d":%d`, k, k)
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}

// serviceSpec is the spec the service uses when site and observed_at are
// outside the configuration (app.Config.Spec: not public, no event-time
// aggregate).
func serviceSpec() Spec {
	return Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days", SkipSite: true, SkipObservedAt: true}
}

// adversarialCases are the input classes, each with the bound on
// the bytes allocated to decode and validate one message and render its
// dead letters: slope x the wire bytes + a constant (the zstd decoder's
// window and tables are allocated per compressed message).
var adversarialCases = []struct {
	name   string
	spec   func() Spec
	msg    func(testing.TB) []byte
	json   bool
	slope  float64
	consts uint64
	full   bool // full tier only (the generator alone takes seconds and 300 MB)
}{
	{"site dictionary, one 61,440-byte entry x 20,000 rows, site unused", serviceSpec, advSiteDict, false, 4, 1 << 20, false},
	{"site dictionary, one 61,440-byte entry x 20,000 rows, site public", func() Spec {
		s := serviceSpec()
		s.SkipSite, s.NullableSite = false, true
		return s
	}, advSiteDict, false, 8, 1 << 20, false},
	{"100 unknown-cohort rows, a 900 KB dictionary value in an unused column (zstd)", serviceSpec, advDeadDict, false, 4, 12 << 20, false},
	{"60-million-entry dictionary, unused column (zstd)", serviceSpec, advHugeDict, false, 4, 12 << 20, true},
	{"60-million-entry cohort dictionary of int8 (zstd, 518 KB)", serviceSpec, advHugeCohortDict, false, 4, 12 << 20, false},
	{"JSON lines, 990 KB, configured keys only", serviceSpec, func(testing.TB) []byte { return advJSON(990_000, 0) }, true, 12, 1 << 20, false},
	{"JSON lines, 990 KB, 40 unconfigured keys a row", serviceSpec, func(testing.TB) []byte { return advJSON(990_000, 40) }, true, 4, 1 << 20, false},
}

// TestAdversarialAllocationBounded: every input class costs at most a
// fixed multiple of its bytes on the wire (plus a constant) to decode,
// validate and dead-letter. On the code before issue 21 the site
// dictionary allocated 1.2 GB for a 594 KB message, the 900 KB value 192
// MB (90 MB of dead letters) for a 2.6 KB message and the int8 cohort
// dictionary 319 MB for 524 KB.
func TestAdversarialAllocationBounded(t *testing.T) {
	for _, c := range adversarialCases {
		t.Run(c.name, func(t *testing.T) {
			if c.full {
				testtier.Full(t, "a 60-million-entry dictionary")
			}
			msg := c.msg(t)
			v := newTestValidator(t, c.spec(), memory.NewGoAllocator())
			v.SetMaxDeadRows(100)
			v.SetMaxDecodeBytes(64 << 20) // the service's default input.max_decoded_bytes
			var dl, good, dead int
			a := allocated(func() {
				var out arrow.Record
				var dls []DeadLetter
				if c.json {
					out, dls = v.DecodeJSON(msg)
				} else {
					out, dls = v.DecodeIPC(msg)
				}
				good = int(out.NumRows())
				out.Release()
				for _, d := range dls {
					b, err := d.MarshalJSON()
					if err != nil {
						t.Fatal(err)
					}
					dl += len(b)
					dead += d.Rows()
				}
			})
			bound := uint64(c.slope*float64(len(msg))) + c.consts
			t.Logf("wire %d bytes: %d rows good, %d dead-lettered (%d bytes of dead letters); allocated %d bytes = %.2f x wire (bound %d)",
				len(msg), good, dead, dl, a, float64(a)/float64(len(msg)), bound)
			if a > bound {
				t.Errorf("allocated %d bytes for a %d-byte message, over the bound %d (%.1f x wire + %d)", a, len(msg), bound, c.slope, c.consts)
			}
			if dl > 100*(MaxDeadFieldBytes+4096) {
				t.Errorf("dead letters of %d bytes", dl)
			}
		})
	}
}

// advHugeCohortDict: the cohort column is dictionary<int32, int8> of 60
// million entries (60 MB decoded, inside the 64 MiB decode bound; zstd on
// the wire, padded with incompressible bytes to 518 KB so that the bound
// is the configured 64 MiB, not the 256 x wire size).
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
		pb.Append(pad)
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
