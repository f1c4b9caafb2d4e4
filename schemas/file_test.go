package schemas

import (
	"encoding/csv"
	"errors"
	"github.com/dpsurv/dpsurv/internal/datasets"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// readAll runs ReadFile and collects good rows and dead letters.
func readAll(t *testing.T, path string, v *Validator, batch int) ([]canonRow, []DeadLetter, int) {
	t.Helper()
	var rows []canonRow
	var dead []DeadLetter
	batches := 0
	err := ReadFile(path, v, batch, func(good arrow.Record, d []DeadLetter) error {
		batches++
		if int(good.NumRows())+countRows(d) > batch {
			t.Errorf("batch of %d good + %d dead rows exceeds %d", good.NumRows(), len(d), batch)
		}
		rows = append(rows, readCanonical(t, good, len(v.Spec().Covariates))...)
		dead = append(dead, d...)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", path, err)
	}
	return rows, dead, batches
}

func countRows(d []DeadLetter) int {
	n := 0
	for _, x := range d {
		if x.RowIndex >= 0 {
			n++
		}
	}
	return n
}

func TestReadFileCSVBadCells(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	v := newTestValidator(t, testSpec(), mem)
	rows, dead, batches := readAll(t, "../testdata/schemas/bad_cells.csv", v, 4)
	if batches != 4 {
		t.Errorf("%d batches, want 4 (15 rows by 4)", batches)
	}
	var gotIDs []string
	for _, r := range rows {
		gotIDs = append(gotIDs, r.ID)
	}
	if want := []string{"1", "11", "quoted, id"}; !reflect.DeepEqual(gotIDs, want) {
		t.Errorf("good ids %v, want %v", gotIDs, want)
	}
	if rows[0].Site != "north" || rows[1].Time != 17 || rows[1].Event || rows[2].Site != `a "quoted" site` {
		t.Errorf("rows %+v", rows)
	}
	got := map[int]string{}
	for _, d := range dead {
		got[d.RowIndex] = d.Reason
	}
	want := map[int]string{
		1: ReasonInvalidTime, 2: ReasonInvalidEvent, 3: ReasonUnknownCohort, 4: ReasonInvalidCovariate,
		5: ReasonDuplicateID, // duplicate of row 0, in an earlier batch
		6: ReasonMissingField, 7: ReasonInvalidTime, 8: ReasonInvalidTime, 9: ReasonMissingField,
		10: ReasonUndecodable, 11: ReasonMissingField, 14: ReasonUndecodable,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dead %v\nwant %v", got, want)
	}
	for _, d := range dead {
		switch d.RowIndex {
		case 1:
			if d.Row["time"] != "abc" || !strings.Contains(d.Detail, `"abc"`) {
				t.Errorf("row 1: %+v", d)
			}
		case 14:
			if string(d.Raw) != "12,19,1,2,75,south,x,surplus\n" {
				t.Errorf("row 14 raw %q", d.Raw)
			}
		}
	}
}

// datasetSpec describes the shared datasets; counts are checked against an
// independent parse of the CSV.
type datasetSpec struct {
	file       string
	cohorts    []string
	covariates []string
}

var datasetSpecs = []datasetSpec{
	{"lung_tte.csv", []string{"1", "2"}, []string{"age", "ph.ecog"}},
	{"kidney_tte.csv", []string{"1", "2", "3", "4"}, []string{"age", "female"}},
	{"flchain_tte.csv", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"},
		[]string{"age", "male", "sample.yr", "kappa", "lambda", "creatinine", "mgus"}},
}

// csvTruth parses a dataset independently of the package: row count,
// events and per-cohort counts, and the sum of times.
func csvTruth(t *testing.T, path string) (n, events int, perCohort map[string]int, sumTime float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	perCohort = map[string]int{}
	for _, r := range recs[1:] {
		n++
		if r[2] == "1" {
			events++
		}
		perCohort[r[3]]++
		x, err := strconv.ParseFloat(r[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		sumTime += x
	}
	return n, events, perCohort, sumTime
}

func TestReadFileSharedDatasets(t *testing.T) {
	t.Parallel()
	for _, ds := range datasetSpecs {
		t.Run(ds.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(datasets.Dir(t), ds.file)
			n, events, perCohort, sumTime := csvTruth(t, path)
			mem := checkedMem(t)
			v := newTestValidator(t, Spec{Cohorts: ds.cohorts, TimeUnit: "days", Covariates: ds.covariates}, mem)
			rows, dead, _ := readAll(t, path, v, 1000)
			if len(dead) != 0 {
				t.Fatalf("%d dead letters, first %+v", len(dead), dead[0])
			}
			gotEvents, gotSum := 0, 0.0
			gotCohort := map[string]int{}
			for _, r := range rows {
				if r.Event {
					gotEvents++
				}
				gotSum += r.Time
				gotCohort[r.Cohort]++
			}
			if len(rows) != n || gotEvents != events || gotSum != sumTime || !reflect.DeepEqual(gotCohort, perCohort) {
				t.Errorf("got %d rows, %d events, sum %v, cohorts %v; CSV has %d, %d, %v, %v",
					len(rows), gotEvents, gotSum, gotCohort, n, events, sumTime, perCohort)
			}
			t.Logf("%s: %d good rows, %d events", ds.file, len(rows), gotEvents)
		})
	}
	// A label missing from the configured list dead-letters exactly its rows.
	t.Run("lung with cohort 2 unconfigured", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(datasets.Dir(t), "lung_tte.csv")
		_, _, perCohort, _ := csvTruth(t, path)
		mem := checkedMem(t)
		v := newTestValidator(t, Spec{Cohorts: []string{"1"}, TimeUnit: "days", Covariates: []string{"age"}}, mem)
		rows, dead, _ := readAll(t, path, v, 64)
		c := CountByReason(dead)
		if len(rows) != perCohort["1"] || c[ReasonUnknownCohort] != perCohort["2"] || len(c) != 1 {
			t.Errorf("%d good, dead %v; want %d good and %d unknown_cohort", len(rows), c, perCohort["1"], perCohort["2"])
		}
	})
}

// Canonical records written with FileWriter (input column names restored)
// read back identically, in every format.
func TestFileRoundTrip(t *testing.T) {
	t.Parallel()
	spec := Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days", Covariates: []string{"age", "ph.ecog"},
		Columns: Columns{ID: "patient"}}
	src := t.TempDir()
	// Rename the id column so that the rename map is exercised.
	orig, err := os.ReadFile(filepath.Join(datasets.Dir(t), "lung_tte.csv"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(src, "lung.csv")
	if err := os.WriteFile(in, []byte(strings.Replace(string(orig), "id,", "patient,", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	mem := checkedMem(t)
	v := newTestValidator(t, spec, mem)
	want, dead, _ := readAll(t, in, v, 50)
	if len(dead) != 0 || len(want) != 210 {
		t.Fatalf("%d rows, %d dead", len(want), len(dead))
	}
	for _, ext := range []string{".csv", ".arrow", ".arrows", ".feather", ".ipc", ".jsonl"} {
		t.Run(ext, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out"+ext)
			w, err := NewFileWriter(out, v.Schema(false, false), spec.RenameToInput(), mem)
			if err != nil {
				t.Fatal(err)
			}
			err = ReadFile(in, v, 64, func(good arrow.Record, _ []DeadLetter) error { return w.Write(good) })
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil { // idempotent
				t.Fatal(err)
			}
			got, dead, _ := readAll(t, out, v, 1000)
			if len(dead) != 0 {
				t.Fatalf("dead %+v", dead[0])
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip through %s changed the rows", ext)
			}
		})
	}
	// CSV text format: bools as 0/1, dictionary values as labels, 'g' floats.
	out := filepath.Join(t.TempDir(), "x.csv")
	rec, err := BuildCanonical(testSpec(), Rows{ID: []string{"a"}, Time: []float64{0.1}, Event: []bool{true},
		Cohort: []int32{2}, Covariates: [][]float64{{1e21}}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	w := writeFile(t, out, rec, mem)
	b, _ := os.ReadFile(out)
	if string(b) != "id,time,event,cohort,age\na,0.1,1,control,1e+21\n" {
		t.Errorf("csv text %q", b)
	}
	if err := w.Write(rec); err == nil {
		t.Error("write after close succeeded")
	}
}

func TestFileWriterSchemaMismatch(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	spec := testSpec()
	w, err := NewFileWriter(filepath.Join(t.TempDir(), "x.arrows"), CanonicalSchema(spec, false, false), nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rec := mkRecord(t, mem, nil, ids("a"), times(1.0))
	defer rec.Release()
	if err := w.Write(rec); err == nil {
		t.Error("wrote a record of another schema")
	}
	if _, err := NewFileWriter(filepath.Join(t.TempDir(), "x.csv"), CanonicalSchema(spec, false, false),
		map[string]string{"time": "id"}, mem); err == nil {
		t.Error("rename to a duplicate name accepted")
	}
}

func TestReadFileErrors(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	v := newTestValidator(t, testSpec(), mem)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.csv")
	os.WriteFile(empty, nil, 0o600)
	headerOnly := filepath.Join(dir, "h.csv")
	os.WriteFile(headerOnly, []byte("id,time,event,cohort,age\n"), 0o600)
	corrupt := filepath.Join(dir, "c.arrow")
	os.WriteFile(corrupt, []byte("ARROW1\x00\x00garbage"), 0o600)
	noop := func(arrow.Record, []DeadLetter) error { return nil }
	cases := []struct {
		name  string
		path  string
		batch int
		fn    func(arrow.Record, []DeadLetter) error
		want  string
	}{
		{"not found", filepath.Join(dir, "nope.csv"), 10, noop, "no such file"},
		{"no header", empty, 10, noop, "no header"},
		{"bad batch size", headerOnly, 0, noop, "batch size"},
		{"unknown extension", filepath.Join(dir, "x.parquet"), 10, noop, "unknown extension"},
		{"corrupt arrow file", corrupt, 10, noop, "arrow"},
		{"callback error", "../testdata/schemas/bad_cells.csv", 10, func(arrow.Record, []DeadLetter) error { return errors.New("stop here") }, "stop here"},
	}
	for _, tc := range cases {
		err := ReadFile(tc.path, v, tc.batch, tc.fn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := ReadFile(headerOnly, v, 10, func(arrow.Record, []DeadLetter) error {
		t.Error("callback for a file without rows")
		return nil
	}); err != nil {
		t.Errorf("header only: %v", err)
	}
}

// An Arrow file with a wrong schema: every row is a dead letter, none lost.
func TestReadFileArrowWrongSchema(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	v := newTestValidator(t, testSpec(), mem)
	rec := mkRecord(t, mem, nil, ids("a", "b", "c"), times(1.0, 2.0, 3.0), events(true, true, true), ages(1.0, 1.0, 1.0))
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "x.arrow")
	writeFile(t, path, rec, memory.NewGoAllocator())
	rows, dead, batches := readAll(t, path, v, 2)
	if len(rows) != 0 || len(dead) != 3 || batches != 2 || dead[2].RowIndex != 2 || dead[2].Reason != ReasonMissingField {
		t.Errorf("%d rows, %d batches, dead %+v", len(rows), batches, dead)
	}
}

func TestFormatFromPath(t *testing.T) {
	t.Parallel()
	cases := map[string]FileFormat{
		"a.csv": FormatCSV, "b.CSV": FormatCSV, "c.arrow": FormatArrowFile, "d.feather": FormatArrowFile,
		"e.ipc": FormatArrowFile, "f.arrows": FormatArrowStream, "g.jsonl": FormatJSONLines, "h.ndjson": FormatJSONLines,
	}
	for p, want := range cases {
		if got, err := FormatFromPath(p); err != nil || got != want {
			t.Errorf("%s: %v, %v", p, got, err)
		}
	}
	for _, p := range []string{"x.parquet", "noext"} {
		if _, err := FormatFromPath(p); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
	_ = array.RecordEqual
}

// Corrupted Arrow files (every byte flipped in turn) give an error or
// dead letters, never a crash, and never more rows than the file holds.
func TestReadFileCorruptArrowNeverCrash(t *testing.T) {
	t.Parallel()
	mem, spec, v := testValidator(t)
	rec, err := BuildInput(spec, []string{"a", "b", "c"}, []float64{1, 2, 3}, []bool{true, false, true},
		[]string{"1", "2", "control"}, [][]float64{{1, 2, 3}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	dir := t.TempDir()
	for _, ext := range []string{".arrow", ".arrows"} {
		clean := filepath.Join(dir, "clean"+ext)
		writeFile(t, clean, rec, mem)
		if rows, dead, _ := readAll(t, clean, v, 10); len(rows) != 3 || len(dead) != 0 {
			t.Fatalf("%s: clean file gave %d rows, %d dead", ext, len(rows), len(dead))
		}
		orig, _ := os.ReadFile(clean)
		bad := filepath.Join(dir, "bad"+ext)
		// One file, each byte flipped in place and back: rewriting a whole
		// file per byte (truncate, write, close) waits on the disk at
		// every close and was most of this test's time.
		if err := os.WriteFile(bad, orig, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(bad, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		errs := 0
		for i := range orig {
			if _, err := f.WriteAt([]byte{orig[i] ^ 0xA5}, int64(i)); err != nil {
				t.Fatal(err)
			}
			total := 0
			err := ReadFile(bad, v, 10, func(good arrow.Record, dead []DeadLetter) error {
				total += int(good.NumRows()) + countRows(dead)
				return nil
			})
			if err != nil {
				errs++
			}
			if total > 3 {
				t.Errorf("%s byte %d: %d rows from a 3-row file", ext, i, total)
			}
			if _, err := f.WriteAt(orig[i:i+1], int64(i)); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: %d of %d corruptions detected as errors", ext, errs, len(orig))
	}
}
