package arrowipc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
	"github.com/dpsurv/dpsurv/schemas"
)

// FuzzZeroCopyArrow: on any bytes read as an Arrow IPC file, the zero-copy
// loader and Arrow's reader agree whenever both read the file (same
// validated rows, same dead letters), neither crashes, and no memory of
// the validator's allocator is left allocated.
func FuzzZeroCopyArrow(f *testing.F) {
	dir := f.TempDir()
	spec := schemas.Spec{Cohorts: []string{"1", "2", "control"}, TimeUnit: "days", Covariates: []string{"age"}}
	mem := memory.NewGoAllocator()
	ids := []string{"a", "b", "b", "c", "d", "e", "f", "g", "h", "i"}
	times := []float64{1, 2, -3, 4, 5, 6, 7, 8, 9, 10}
	events := []bool{true, false, true, false, true, false, true, false, true, false}
	cohorts := []string{"1", "2", "control", "x", "1", "2", "control", "1", "2", "control"}
	age := []float64{40, 41, 42, 43, 44, 45, 46, 47, 48, 49}
	a, err := schemas.BuildInput(spec, ids, times, events, cohorts, [][]float64{age}, mem)
	if err != nil {
		f.Fatal(err)
	}
	defer a.Release()
	for _, stream := range []bool{true, false} {
		path := filepath.Join(dir, fmt.Sprintf("seed-%v.arrow", stream))
		arrowipctest.WriteFile(f, path, stream, []arrow.Record{a, a.NewSlice(3, 9)})
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cm := memory.NewCheckedAllocator(memory.NewGoAllocator())
		t.Cleanup(func() { cm.AssertSize(t, 0) })
		v, err := schemas.NewValidator(spec, cm)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "f.arrow")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, gotErr := validated(t, path, v, true)
		want, wantErr := validated(t, path, v, false)
		// Compared as printed: a NaN cell in a dead letter's row is not
		// DeepEqual to itself.
		if gotErr == nil && wantErr == nil && got != want {
			t.Fatalf("zero-copy read\n%s\nArrow's reader\n%s", got, want)
		}
	})
}

// validated opens path with arrowipc.OpenFile and validates its batches,
// printing the good rows and dead letters; a panic of a reader on a corrupt
// file is an error, as in schemas.ReadFile.
func validated(t *testing.T, path string, v *schemas.Validator, zeroCopy bool) (out string, err error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt file: %v", p)
		}
	}()
	sr, _, err := arrowipc.OpenFile(f, zeroCopy)
	if err != nil {
		return "", err
	}
	defer sr.Release()
	for sr.Next() {
		rec := sr.Record()
		if err := arrowipc.CheckLengths(rec); err != nil {
			return "", err
		}
		good, dead := v.Validate(rec)
		for c, col := range good.Columns() {
			out += fmt.Sprintf("%s=%v\n", good.Schema().Field(c).Name, col)
		}
		out += fmt.Sprintf("%+v\n", dead)
		good.Release()
	}
	return out, sr.Err()
}
