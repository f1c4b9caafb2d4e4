package sanitize_test

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/schemas/schemastest"
)

// advCohorts covers both generators' labels.
var advCohorts = []string{"rel-a", "rel-b", "1", "2"}

// advProcessor is the service's processor for a config with the given
// public fields and input format (the validator as app.Service builds it).
func advProcessor(t *testing.T, public []string, format string) *sanitize.Processor {
	t.Helper()
	mem := memory.NewGoAllocator()
	cfg := app.DefaultConfig()
	cfg.Input.Format = format
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: advCohorts, Public: public}
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	cfg.Sanitizers.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}
	v, err := schemas.NewValidator(cfg.Spec(), mem)
	if err != nil {
		t.Fatal(err)
	}
	v.SetMaxDeadRows(sanitize.DefaultMaxDeadRows)
	v.SetMaxDecodeBytes(app.DefaultMaxDecodedBytes)
	chain, err := sanitizers.New(cfg.SanitizerConfig(pipelinetest.Key), mem)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(chain.Release)
	return &sanitize.Processor{Validator: v, Chain: chain, Format: format, Mem: mem, Metrics: sanitize.NewMetrics(nil)}
}

// sameIDMessage is n rows all with one id (zstd).
func sameIDMessage(t testing.TB, n int) []byte {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "same-patient"
	}
	return zstdRows(t, ids)
}

func zstdRows(t testing.TB, ids []string) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "time", Type: arrow.PrimitiveTypes.Float64},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean}, {Name: "cohort", Type: arrow.BinaryTypes.String}}, nil))
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		b.Field(1).(*array.Float64Builder).Append(float64(1 + i%1000))
		b.Field(2).(*array.BooleanBuilder).Append(i%2 == 0)
		b.Field(3).(*array.StringBuilder).Append(advCohorts[i%2])
	}
	rec := b.NewRecord()
	defer rec.Release()
	return schemastest.Encode(t, rec, mem, ipc.WithZstd())
}

// bombMessage is one row whose unused column holds 80 MB of zeros, zstd.
func bombMessage(t testing.TB) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "time", Type: arrow.PrimitiveTypes.Float64},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean}, {Name: "cohort", Type: arrow.BinaryTypes.String},
		{Name: "blob", Type: arrow.BinaryTypes.Binary}}, nil))
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("p")
	b.Field(1).(*array.Float64Builder).Append(1)
	b.Field(2).(*array.BooleanBuilder).Append(true)
	b.Field(3).(*array.StringBuilder).Append(advCohorts[0])
	b.Field(4).(*array.BinaryBuilder).Append(make([]byte, 80<<20))
	rec := b.NewRecord()
	defer rec.Release()
	return schemastest.Encode(t, rec, mem, ipc.WithZstd())
}

func noise(n int) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Issue 21: every input class of docs/operations.md's adversarial table,
// through the service's processor (decode, validate, sanitize, encode the
// outputs and the dead letters): the bytes it allocates for one message
// (runtime.MemStats.TotalAlloc, an upper bound of the heap the message
// costs) are bounded by slope x the bytes on the wire + a constant, every
// row is accounted (records in = sanitized + dead-lettered) and the
// processor returns (the partition flows). The test logs the table row of
// each class (docs/operations.md).
func TestAdversarialClassesBounded(t *testing.T) {
	dup := func(t testing.TB) []byte { return sameIDMessage(t, 110_000) }
	cases := []struct {
		name   string
		public []string
		format string
		key    []byte
		msg    func(testing.TB) []byte
		slope  float64
		consts uint64
		full   bool
	}{
		{"bytes that are not Arrow IPC", nil, "arrow", nil, func(testing.TB) []byte { return []byte("hello, not arrow") }, 8, 1 << 20, false},
		{"not Arrow, 950 KB", nil, "arrow", nil, func(testing.TB) []byte { return noise(950_000) }, 6, 1 << 20, false},
		{"valid, 25,000 rows", nil, "arrow", nil, func(t testing.TB) []byte {
			return pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("v-", 25_000), false)
		}, 14, 1 << 20, false},
		{"key of 900 KB", nil, "arrow", noise(900_000), func(t testing.TB) []byte { return pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("k-", 100), false) }, 8, 1 << 20, false},
		{"id of 70,000 bytes", nil, "arrow", nil, func(t testing.TB) []byte {
			return pipelinetest.RowsMessage(t, []string{strings.Repeat("x", 70_000), "ok-long-0"}, false)
		}, 32, 1 << 20, false},
		{"negative null count", nil, "arrow", nil, func(t testing.TB) []byte {
			return pipelinetest.NegativeNullCountMessage(t, schemas.Spec{Cohorts: advCohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}, "nc-", 13)
		}, 8, 1 << 20, false},
		{"public site missing (nullable)", []string{"event", "site"}, "arrow", nil, func(t testing.TB) []byte { return pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("ns-", 55), false) }, 8, 1 << 20, false},
		{"110,000 rows of one id (zstd)", nil, "arrow", nil, dup, 32, 1 << 20, false},
		{"compression bomb (80 MB of zeros, zstd)", nil, "arrow", nil, bombMessage, 32, 1 << 20, false},
		{"site dictionary, 61,440-byte entry x 20,000 rows, site unused", nil, "arrow", nil, schemastest.SiteDict, 12, 1 << 20, false},
		{"site dictionary, 61,440-byte entry x 20,000 rows, site public", []string{"event", "site"}, "arrow", nil, schemastest.SiteDict, 16, 1 << 20, false},
		{"100 unknown-cohort rows, 900 KB value in an unused column (zstd)", nil, "arrow", nil, schemastest.DeadDict, 8, 16 << 20, false},
		{"60-million-entry dictionary in an unused column (zstd)", nil, "arrow", nil, schemastest.HugeDict, 8, 16 << 20, true},
		{"60-million-entry int8 cohort dictionary (zstd, 524 KB)", nil, "arrow", nil, schemastest.HugeCohortDict, 16, 1 << 20, false},
		{"JSON lines, 990 KB of 50-byte rows", nil, "json", nil, func(testing.TB) []byte { return schemastest.JSONLines(990_000, 0) }, 16, 1 << 20, false},
		{"JSON lines, 990 KB, 40 unconfigured keys a row", nil, "json", nil, func(testing.TB) []byte { return schemastest.JSONLines(990_000, 40) }, 4, 1 << 20, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.full {
				testtier.Full(t, "a 60-million-entry dictionary")
			}
			p := advProcessor(t, c.public, c.format)
			msg := message.Message{Topic: "in", Key: c.key, Value: c.msg(t)}
			wire := len(msg.Key) + len(msg.Value)
			var res result
			var err error
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res, err = process(p, msg)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("process: %v (the partition would not flow)", err)
			}
			a := after.TotalAlloc - before.TotalAlloc
			dead := 0
			reasons := map[string]int{}
			for _, d := range res.DeadInfo {
				dead += d.Rows
				reasons[d.Reason] += d.Rows
			}
			if res.RecordsIn != res.Records+dead {
				t.Errorf("records in %d != sanitized %d + dead-lettered %d", res.RecordsIn, res.Records, dead)
			}
			bound := uint64(c.slope*float64(wire)) + c.consts
			t.Logf("| %s | %d B | %d sanitized, dead letters %v (%d messages) | %.1f x wire (%d B allocated) |",
				c.name, wire, res.Records, reasons, len(res.Dead), float64(a)/float64(wire), a)
			if a > bound {
				t.Errorf("allocated %d bytes for %d on the wire, over %.0f x wire + %d", a, wire, c.slope, c.consts)
			}
		})
	}
}
