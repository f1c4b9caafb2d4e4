package schemas

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
)

func readArrowPath(t testing.TB, path string, v *Validator, batch int, zeroCopy bool) csvResult {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return collectCSV(t, len(v.Spec().Covariates), func(fn func(arrow.Record, []DeadLetter) error) error {
		return readArrowWith(f, v, batch, fn, zeroCopy)
	})
}

// The zero-copy loader gives what Arrow's reader gives (rows, dead
// letters, errors), in both IPC formats, compressed files going through
// Arrow's reader, and the validator's checked allocator gets all its
// memory back (arrowipc's TestZeroCopyAliasesFile checks that the column
// buffers are slices of the file's bytes).
func TestArrowZeroCopyMatchesReader(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	v := newTestValidator(t, testSpec(), mem)
	// The inputs are Go-allocated: Arrow's writers keep a dictionary they
	// never release.
	a, b := arrowipctest.Record(t, InputSchema(testSpec()), 500, memory.NewGoAllocator()), arrowipctest.Record(t, InputSchema(testSpec()), 70, memory.NewGoAllocator())
	defer a.Release()
	defer b.Release()
	dir := t.TempDir()
	// Batch lengths that cut the records at different places.
	batchLen := map[string]int{"file": 64, "stream": 1000, "file-lz4": 100, "stream-zstd": 33}
	for _, tc := range arrowipctest.FileCases(a, b) {
		path := filepath.Join(dir, tc.Name+".arrow")
		arrowipctest.WriteFile(t, path, tc.Stream, tc.Recs, tc.Opts...)
		got := readArrowPath(t, path, v, batchLen[tc.Name], true)
		want := readArrowPath(t, path, v, batchLen[tc.Name], false)
		if got.err != "" || want.err != "" {
			t.Fatalf("%s: errors %q, %q", tc.Name, got.err, want.err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: zero-copy read\n%+v\nArrow's reader\n%+v", tc.Name, got, want)
		}
		if len(got.rows) == 0 || len(got.dead) == 0 {
			t.Fatalf("%s: %d rows, %d dead: the test needs both", tc.Name, len(got.rows), len(got.dead))
		}
	}
}

// ReadTable gives ReadFile's good rows as columns and its dead letters
// counted, in every format.
func TestReadTableMatchesReadFile(t *testing.T) {
	t.Parallel()
	_, spec, v := testValidator(t)
	rec := arrowipctest.Record(t, InputSchema(testSpec()), 300, memory.NewGoAllocator())
	defer rec.Release()
	dir := t.TempDir()
	for _, ext := range []string{".csv", ".arrow", ".arrows", ".jsonl"} {
		path := filepath.Join(dir, "in"+ext)
		writeFile(t, path, rec, memory.NewGoAllocator())
		want := collectCSV(t, len(spec.Covariates), func(fn func(arrow.Record, []DeadLetter) error) error {
			return ReadFile(path, v, 64, fn)
		})
		if want.err != "" || len(want.rows) == 0 || len(want.dead) == 0 {
			t.Fatalf("%s: ReadFile: %d rows, %d dead, error %q", ext, len(want.rows), len(want.dead), want.err)
		}
		got, err := ReadTable(path, v)
		if err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		if wt := tableOf(want, spec); !reflect.DeepEqual(got, wt) {
			t.Fatalf("%s: ReadTable\n%+v\nReadFile\n%+v", ext, got, wt)
		}
	}
}
