package schemas

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
)

// ipcSeeds returns valid and interesting messages for the fuzz corpus.
func ipcSeeds(t testing.TB) [][]byte {
	mem := memory.NewGoAllocator()
	spec := testSpec()
	var seeds [][]byte
	in, err := BuildInput(spec, []string{"a", "b", "c", "a"}, []float64{1, -2, 3, 4}, []bool{true, false, true, true},
		[]string{"control", "1", "9", "2"}, [][]float64{{50, math.NaN(), 52, 53}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	seeds = append(seeds, encode(t, in, mem))
	var lz bytes.Buffer
	w := ipc.NewWriter(&lz, ipc.WithSchema(in.Schema()), ipc.WithAllocator(mem), ipc.WithLZ4())
	_ = w.Write(in)
	_ = w.Write(in)
	_ = w.Close()
	seeds = append(seeds, lz.Bytes())
	mixed := mkRecord(t, mem, nil, typed(ids(1, 2), tI64), typed(times(3, 4), tI32), typed(events(1, 5), tI8),
		typed(cohorts("1", "x"), tString), typed(ages(1, 2), tI64),
		col{"site", tDictS, []any{"n", nil}}, col{"observed_at", tTSms, []any{time.Unix(1700000000, 0), nil}})
	defer mixed.Release()
	seeds = append(seeds, encode(t, mixed, mem))
	return seeds
}

// checkCanonicalInvariants verifies what every validated record promises.
func checkCanonicalInvariants(t *testing.T, spec Spec, out arrow.Record) {
	t.Helper()
	if out == nil {
		t.Fatal("nil record")
	}
	s := out.Schema()
	ok := false
	for _, site := range []bool{false, true} {
		for _, obs := range []bool{false, true} {
			for _, dict := range []bool{false, true} {
				if s.Equal(canonicalSchema(spec, site, obs, dict)) {
					ok = true
				}
			}
		}
	}
	if !ok {
		t.Fatalf("schema %v is not canonical", s)
	}
	for c := 0; c < int(out.NumCols()); c++ {
		if out.Column(c).NullN() != 0 {
			t.Fatalf("column %s has nulls", s.Field(c).Name)
		}
	}
	ids := out.Column(ColID).(*array.String)
	seen := map[string]bool{}
	for i := 0; i < ids.Len(); i++ {
		id := ids.Value(i)
		if id == "" || seen[id] {
			t.Fatalf("id %q empty or repeated", id)
		}
		seen[id] = true
	}
	for _, x := range out.Column(ColTime).(*array.Float64).Float64Values() {
		if !(x >= 0) || math.IsInf(x, 1) {
			t.Fatalf("time %v", x)
		}
	}
	d := out.Column(ColCohort).(*array.Dictionary)
	if d.Dictionary().Len() != len(spec.Cohorts) {
		t.Fatalf("dictionary length %d", d.Dictionary().Len())
	}
	for _, c := range d.Indices().(*array.Int32).Int32Values() {
		if c < 0 || int(c) >= len(spec.Cohorts) {
			t.Fatalf("cohort code %d", c)
		}
	}
	for k := range spec.Covariates {
		for _, x := range out.Column(ColFirstCovariate + k).(*array.Float64).Float64Values() {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("covariate %v", x)
			}
		}
	}
}

func checkDeadInvariants(t *testing.T, data []byte, out arrow.Record, dead []DeadLetter) {
	t.Helper()
	for _, d := range dead {
		if !slices.Contains(Reasons, d.Reason) {
			t.Fatalf("unknown reason %q", d.Reason)
		}
		if d.Detail == "" {
			t.Fatalf("empty detail for %s", d.Reason)
		}
		if d.RowIndex < 0 {
			if len(dead) != 1 || out.NumRows() != 0 || !bytes.Equal(d.Raw, data) {
				t.Fatalf("whole-message dead letter must be alone, with no good rows and the raw bytes")
			}
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("marshal dead letter: %v", err)
		}
	}
}

func FuzzDecodeIPC(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0})
	// Both IPC formats as Arrow JS writes them (the file format is read
	// through its footer).
	for _, name := range []string{"tte_stream.arrows", "tte_file.arrow"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "arrowjs", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	spec := testSpec()
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, spec, data, (*Validator).DecodeIPC)
		// arrowipc.DecodeRecords must not panic either.
		recs, err := arrowipc.DecodeRecords(data, memory.NewGoAllocator())
		if err == nil {
			for _, r := range recs {
				r.Release()
			}
		}
	})
}

// checkDecode decodes data with a fresh validator of spec and checks the
// invariants of what decode returns, and that nothing stays allocated.
func checkDecode(t *testing.T, spec Spec, data []byte, decode func(*Validator, []byte) (arrow.Record, []DeadLetter)) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	v, err := NewValidator(spec, mem)
	if err != nil {
		t.Fatal(err)
	}
	out, dead := decode(v, data)
	checkCanonicalInvariants(t, spec, out)
	checkDeadInvariants(t, data, out, dead)
	out.Release()
	if n := mem.CurrentAlloc(); n != 0 {
		t.Fatalf("%d bytes still allocated", n)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"id":"a","time":1,"event":1,"cohort":"1","age":50}`))
	f.Add([]byte("{\"id\":\"a\",\"time\":\"2\",\"event\":true,\"cohort\":2,\"age\":\"50\"}\n{\"id\":\"a\",\"time\":-1}\nnot json\n[1,2]"))
	f.Add([]byte(`[{"id":7,"time":1.5,"event":"0","cohort":"control","age":1e3,"site":"s","observed_at":"2024-01-02T03:04:05Z"},3]`))
	f.Add([]byte(`[{"id":"x","time":NaN}]`))
	f.Add([]byte(""))
	spec := testSpec()
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, spec, data, (*Validator).DecodeJSON)
	})
}
