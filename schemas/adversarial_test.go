package schemas

import (
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/schemas/schemastest"
)

// Issue 21, defect 2: the input shapes whose decoded form outgrew their
// bytes on the wire. Each generator builds a message as a hostile or
// careless producer would; TestAdversarialAllocationBounded measures the
// bytes allocated to decode, validate and render the dead letters of each
// (runtime.MemStats.TotalAlloc, an upper bound of the heap the message
// costs) and bounds them by a multiple of the wire bytes.

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
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
	full   bool // full tier only (the generator alone takes 240 MB, and seconds under -race)
}{
	{"site dictionary, one 61,440-byte entry x 20,000 rows, site unused", serviceSpec, schemastest.SiteDict, false, 4, 1 << 20, false},
	{"site dictionary, one 61,440-byte entry x 20,000 rows, site public", func() Spec {
		s := serviceSpec()
		s.SkipSite, s.NullableSite = false, true
		return s
	}, schemastest.SiteDict, false, 8, 1 << 20, false},
	{"100 unknown-cohort rows, a 900 KB dictionary value in an unused column (zstd)", serviceSpec, schemastest.DeadDict, false, 4, 12 << 20, false},
	{"60-million-entry dictionary, unused column (zstd)", serviceSpec, schemastest.HugeDict, false, 4, 12 << 20, true},
	{"60-million-entry cohort dictionary of int8 (zstd, 518 KB)", serviceSpec, schemastest.HugeCohortDict, false, 4, 12 << 20, false},
	{"JSON lines, 990 KB, configured keys only", serviceSpec, func(testing.TB) []byte { return schemastest.JSONLines(990_000, 0) }, true, 12, 1 << 20, false},
	{"JSON lines, 990 KB, 40 unconfigured keys a row", serviceSpec, func(testing.TB) []byte { return schemastest.JSONLines(990_000, 40) }, true, 4, 1 << 20, false},
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
