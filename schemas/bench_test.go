package schemas

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
	"github.com/dpsurv/dpsurv/internal/benchtest"
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

// benchBadEvery runs body, for every bad-th row invalid (0: none, and 100),
// on a fresh validator and a 1000-row input of benchInput.
func benchBadEvery(b *testing.B, body func(b *testing.B, v *Validator, rec arrow.Record, mem memory.Allocator)) {
	for _, bad := range []int{0, 100} {
		b.Run(fmt.Sprintf("bad_every_%d", bad), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			v := newTestValidator(b, testSpec(), mem)
			rec := benchInput(b, 1000, bad, mem)
			defer rec.Release()
			body(b, v, rec, mem)
		})
	}
}

// BenchmarkValidateIPC: decode + validate one 1000-row IPC message.
func BenchmarkValidateIPC(b *testing.B) {
	benchBadEvery(b, func(b *testing.B, v *Validator, rec arrow.Record, mem memory.Allocator) {
		data, err := arrowipc.Encode(rec, mem)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		benchRows(b, int(rec.NumRows()), func() (arrow.Record, []DeadLetter) { return v.DecodeIPC(data) })
	})
}

// BenchmarkValidate: validation alone of an already decoded 1000-row record.
func BenchmarkValidate(b *testing.B) {
	benchBadEvery(b, func(b *testing.B, v *Validator, rec arrow.Record, _ memory.Allocator) {
		b.ReportAllocs()
		benchRows(b, int(rec.NumRows()), func() (arrow.Record, []DeadLetter) { return v.Validate(rec) })
	})
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
	benchRows(b, 1000, func() (arrow.Record, []DeadLetter) { return v.DecodeJSON(data) })
}

// benchRows times call, which decodes or validates n rows, releasing the
// record it returns, and reports rows/s.
func benchRows(b *testing.B, n int, call func() (arrow.Record, []DeadLetter)) {
	b.Helper()
	rows := 0
	for b.Loop() {
		out, _ := call()
		rows += n
		out.Release()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// benchCSV writes an n-row CSV like `dpsurv gen --covariates 3` (integer
// days, ids p0000001, an integer and two decimal covariates).
func benchCSV(b *testing.B, n int) string {
	b.Helper()
	var buf bytes.Buffer
	buf.WriteString("id,time,event,cohort,age,female,bmi\n")
	for i := range n {
		fmt.Fprintf(&buf, "p%07d,%d,%d,%s,%d,%d,%d.%d\n", i, 1+i*7919%3650, i%2, []string{"1", "2", "control"}[i%3],
			40+i%40, i%2, 18+i%20, i%10)
	}
	path := filepath.Join(b.TempDir(), "bench.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReadFileCSV: a 200,000-row CSV (7 columns, 3 covariates kept),
// typed and validated: "table" is ReadTable (the fits' path, into Go
// columns), "fast" ReadFile (canonical Arrow batches, streaming),
// "encoding_csv" the reader ReadFile replaced. MB/cpu-s is per CPU second
// of the process (getrusage), whatever GOMAXPROCS.
func BenchmarkReadFileCSV(b *testing.B) {
	path := benchCSV(b, 200000)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	spec := Spec{Cohorts: []string{"1", "2", "control"}, TimeUnit: "days", Covariates: []string{"age", "female", "bmi"}}
	for _, impl := range []string{"table", "fast", "encoding_csv"} {
		b.Run(impl, func(b *testing.B) {
			v, err := NewValidator(spec, memory.NewGoAllocator())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			cpu0 := cpuSeconds()
			for b.Loop() {
				rows := 0
				fn := func(good arrow.Record, dead []DeadLetter) error {
					rows += int(good.NumRows()) + len(dead)
					return nil
				}
				switch impl {
				case "table":
					var t *Table
					t, err = ReadTable(path, v)
					if err == nil {
						rows = t.Len()
						for _, n := range t.Dead {
							rows += n
						}
					}
				case "fast":
					err = ReadFile(path, v, 1<<16, fn)
				default:
					var f *os.File
					f, err = os.Open(path)
					if err == nil {
						err = readCSVOracle(f, v, 1<<16, fn)
						f.Close()
					}
				}
				if err != nil || rows != 200000 {
					b.Fatal(rows, err)
				}
			}
			b.ReportMetric(float64(fi.Size())*float64(b.N)/1e6/(cpuSeconds()-cpu0), "MB/cpu-s")
		})
	}
}

// cpuSeconds is the process's user + system CPU time in seconds: the
// benchmarks report throughput per CPU second besides wall time, since the
// machine they run on is shared.
func cpuSeconds() float64 { return float64(benchtest.ProcessCPU()) / 1e9 }

// BenchmarkReadFileArrow: a 200,000-row Arrow IPC file (tte.v1, one
// covariate, 8 batches). "load": reading the file and loading its record
// batches, zero-copy (one read of the file, the columns slices of it)
// against Arrow's reader (each buffer copied out of the message); "read":
// ReadFile, i.e. load + validate into canonical batches, both ways. B/op
// shows the copies: the file's bytes once for zero-copy (its one read),
// about twice for Arrow's reader.
func BenchmarkReadFileArrow(b *testing.B) {
	const n, batches = 200000, 8
	mem := memory.NewGoAllocator()
	all := benchInput(b, n, 0, mem)
	defer all.Release()
	var recs []arrow.Record
	for k := range int64(batches) {
		r := all.NewSlice(k*n/batches, (k+1)*n/batches)
		defer r.Release()
		recs = append(recs, r)
	}
	path := filepath.Join(b.TempDir(), "bench.arrow")
	arrowipctest.WriteFile(b, path, false, recs)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	v := newTestValidator(b, testSpec(), mem)
	for _, stage := range []string{"load", "read"} {
		for _, zc := range []bool{true, false} {
			name := stage + "/arrow_reader"
			if zc {
				name = stage + "/zero_copy"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(fi.Size())
				b.ReportAllocs()
				cpu0 := cpuSeconds()
				for b.Loop() {
					f, err := os.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					rows := 0
					if stage == "read" {
						err = readArrowWith(f, v, 1<<16, func(good arrow.Record, dead []DeadLetter) error {
							rows += int(good.NumRows()) + len(dead)
							return nil
						}, zc)
					} else {
						rows, err = loadArrow(f, fi.Size(), zc)
					}
					f.Close()
					if err != nil || rows != n {
						b.Fatal(rows, err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(fi.Size())*float64(b.N)/1e6/(cpuSeconds()-cpu0), "MB/cpu-s")
			})
		}
	}
}

// loadArrow reads the record batches of an Arrow IPC file (file format)
// and counts their rows.
func loadArrow(f *os.File, _ int64, zc bool) (int, error) {
	sr, _, err := arrowipc.OpenFile(f, zc)
	if err != nil {
		return 0, err
	}
	defer sr.Release()
	rows := 0
	for sr.Next() {
		rows += int(sr.Record().NumRows())
	}
	return rows, sr.Err()
}

// BenchmarkReadTableCSVFile: ReadTable on the CSV file named by
// DPSURV_BENCH_CSV (e.g. from `dpsurv gen --n 1000000 --covariates 3`:
// cohorts A,B,C and covariates age,female,bmi), to compare with other
// readers of the same file.
func BenchmarkReadTableCSVFile(b *testing.B) {
	path, size := benchtest.CSVFile(b)
	v, err := NewValidator(Spec{Cohorts: []string{"A", "B", "C"}, TimeUnit: "days", Covariates: []string{"age", "female", "bmi"}}, memory.NewGoAllocator())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for b.Loop() {
		t, err := ReadTable(path, v)
		if err != nil || t.Len() == 0 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)*float64(b.N)/1e6/(cpuSeconds()-cpu0), "MB/cpu-s")
}
