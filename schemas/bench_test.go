package schemas

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// benchInput builds an n-row tte.v1 record (canonical-compatible types);
// every badEvery-th row has a negative time (0: none).
func benchInput(b *testing.B, n, badEvery int, mem memory.Allocator) arrow.Record {
	spec := testSpec()
	ids := make([]string, n)
	times := make([]float64, n)
	events := make([]bool, n)
	cohorts := make([]string, n)
	age := make([]float64, n)
	for i := range ids {
		ids[i] = "patient-" + strconv.Itoa(1000000+i)
		times[i] = float64(i % 3650)
		if badEvery > 0 && i%badEvery == badEvery-1 {
			times[i] = -1
		}
		events[i] = i%3 == 0
		cohorts[i] = spec.Cohorts[i%len(spec.Cohorts)]
		age[i] = 40 + float64(i%50)
	}
	rec, err := BuildInput(spec, ids, times, events, cohorts, [][]float64{age}, mem)
	if err != nil {
		b.Fatal(err)
	}
	return rec
}

// BenchmarkValidateIPC: decode + validate one 1000-row IPC message.
func BenchmarkValidateIPC(b *testing.B) {
	for _, bad := range []int{0, 100} {
		b.Run(fmt.Sprintf("bad_every_%d", bad), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			v, err := NewValidator(testSpec(), mem)
			if err != nil {
				b.Fatal(err)
			}
			rec := benchInput(b, 1000, bad, mem)
			defer rec.Release()
			data, err := EncodeIPC(rec, mem)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				out, _ := v.DecodeIPC(data)
				rows += int(rec.NumRows())
				out.Release()
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkValidate: validation alone of an already decoded 1000-row record.
func BenchmarkValidate(b *testing.B) {
	for _, bad := range []int{0, 100} {
		b.Run(fmt.Sprintf("bad_every_%d", bad), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			v, err := NewValidator(testSpec(), mem)
			if err != nil {
				b.Fatal(err)
			}
			rec := benchInput(b, 1000, bad, mem)
			defer rec.Release()
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				out, _ := v.Validate(rec)
				rows += int(rec.NumRows())
				out.Release()
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	v, err := NewValidator(testSpec(), memory.NewGoAllocator())
	if err != nil {
		b.Fatal(err)
	}
	var data []byte
	for i := 0; i < 1000; i++ {
		data = fmt.Appendf(data, `{"id":"p%d","time":%d,"event":%d,"cohort":"%d","age":%d}`+"\n", i, i%3650, i%2, 1+i%2, 40+i%50)
	}
	rows := 0
	for b.Loop() {
		out, _ := v.DecodeJSON(data)
		rows += 1000
		out.Release()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
