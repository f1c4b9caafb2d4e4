package schemas

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

func ids(xs ...any) col                 { return col{"id", tString, xs} }
func times(xs ...any) col               { return col{"time", tF64, xs} }
func events(xs ...any) col              { return col{"event", tBool, xs} }
func cohorts(xs ...any) col             { return col{"cohort", tDict32, xs} }
func ages(xs ...any) col                { return col{"age", tF64, xs} }
func typed(c col, t arrow.DataType) col { c.typ = t; return c }

var nan, inf = math.NaN(), math.Inf(1)

func TestValidateReasons(t *testing.T) {
	t.Parallel()
	paris, _ := time.LoadLocation("Europe/Paris")
	obsT := time.Date(2024, 3, 1, 12, 30, 0, 0, paris)
	cases := []struct {
		name string
		md   map[string]string
		cols []col
		good []string       // ids of good rows, in order
		dead map[int]string // row index -> reason
	}{
		{
			name: "all good canonical types",
			md:   map[string]string{MetaSchema: InputSchemaName, MetaTimeUnit: "days"},
			cols: []col{ids("a", "b", "c"), times(0.0, 1.5, 1e6), events(true, false, true), cohorts("1", "control", "2"), ages(50.0, 60.0, -1.0)},
			good: []string{"a", "b", "c"},
		},
		{
			name: "invalid time: negative, NaN, +Inf, -Inf; null is missing",
			cols: []col{ids("a", "b", "c", "d", "e", "f"), times(-1.0, nan, inf, -inf, nil, 0.0), events(true, true, true, true, true, true),
				cohorts("1", "1", "1", "1", "1", "1"), ages(1.0, 1.0, 1.0, 1.0, 1.0, 1.0)},
			good: []string{"f"},
			dead: map[int]string{0: ReasonInvalidTime, 1: ReasonInvalidTime, 2: ReasonInvalidTime, 3: ReasonInvalidTime, 4: ReasonMissingField},
		},
		{
			name: "event as int: 0/1 good, 2 and -1 invalid, null missing",
			cols: []col{ids("a", "b", "c", "d", "e"), times(1.0, 2.0, 3.0, 4.0, 5.0), typed(events(0, 1, 2, -1, nil), tI64),
				cohorts("1", "1", "1", "1", "1"), ages(1.0, 1.0, 1.0, 1.0, 1.0)},
			good: []string{"a", "b"},
			dead: map[int]string{2: ReasonInvalidEvent, 3: ReasonInvalidEvent, 4: ReasonMissingField},
		},
		{
			name: "event as float: 0.0/1.0 good, 0.5 and NaN invalid",
			cols: []col{ids("a", "b", "c", "d"), times(1.0, 2.0, 3.0, 4.0), typed(events(0.0, 1.0, 0.5, nan), tF64),
				cohorts("1", "1", "1", "1"), ages(1.0, 1.0, 1.0, 1.0)},
			good: []string{"a", "b"},
			dead: map[int]string{2: ReasonInvalidEvent, 3: ReasonInvalidEvent},
		},
		{
			name: "unknown cohort in a dictionary; labels are case sensitive; null missing",
			cols: []col{ids("a", "b", "c", "d"), times(1.0, 2.0, 3.0, 4.0), events(true, true, true, true),
				typed(cohorts("3", "Control", "control", nil), tDictS), ages(1.0, 1.0, 1.0, 1.0)},
			good: []string{"c"},
			dead: map[int]string{0: ReasonUnknownCohort, 1: ReasonUnknownCohort, 3: ReasonMissingField},
		},
		{
			name: "cohort as utf8",
			cols: []col{ids("a", "b"), times(1.0, 2.0), events(true, true), typed(cohorts("2", "x"), tString), ages(1.0, 1.0)},
			good: []string{"a"},
			dead: map[int]string{1: ReasonUnknownCohort},
		},
		{
			name: "cohort as int matched against label strings",
			cols: []col{ids("a", "b", "c"), times(1.0, 2.0, 3.0), events(true, true, true), typed(cohorts(1, 2, 7), tI32), ages(1.0, 1.0, 1.0)},
			good: []string{"a", "b"},
			dead: map[int]string{2: ReasonUnknownCohort},
		},
		{
			name: "duplicate id: every occurrence after the first good one",
			cols: []col{ids("a", "b", "a", "a", "b"), times(1.0, 2.0, 3.0, 4.0, 5.0), events(true, true, true, true, true),
				cohorts("1", "1", "1", "1", "1"), ages(1.0, 1.0, 1.0, 1.0, 1.0)},
			good: []string{"a", "b"},
			dead: map[int]string{2: ReasonDuplicateID, 3: ReasonDuplicateID, 4: ReasonDuplicateID},
		},
		{
			name: "a bad row does not claim its id: the corrected row passes",
			cols: []col{ids("x", "x"), times(-5.0, 5.0), events(true, true), cohorts("1", "1"), ages(1.0, 1.0)},
			good: []string{"x"},
			dead: map[int]string{0: ReasonInvalidTime},
		},
		{
			name: "invalid covariate: NaN, Inf, null",
			cols: []col{ids("a", "b", "c", "d"), times(1.0, 2.0, 3.0, 4.0), events(true, true, true, true),
				cohorts("1", "1", "1", "1"), ages(nan, -inf, nil, 3.0)},
			good: []string{"d"},
			dead: map[int]string{0: ReasonInvalidCovariate, 1: ReasonInvalidCovariate, 2: ReasonInvalidCovariate},
		},
		{
			name: "int covariate",
			cols: []col{ids("a"), times(1.0), events(true), cohorts("1"), typed(ages(70), tI64)},
			good: []string{"a"},
		},
		{
			name: "invalid id: empty, not UTF-8; null is missing",
			cols: []col{ids("", "\xff\xfe", nil, "ok", "Zoë"), times(1.0, 2.0, 3.0, 4.0, 5.0), events(true, true, true, true, true),
				cohorts("1", "1", "1", "1", "1"), ages(1.0, 1.0, 1.0, 1.0, 1.0)},
			good: []string{"ok", "Zoë"},
			dead: map[int]string{0: ReasonInvalidID, 1: ReasonInvalidID, 2: ReasonMissingField},
		},
		{
			name: "int ids become decimal strings; time as int64, event int8",
			cols: []col{typed(ids(42, -7), tI64), typed(times(3, 0), tI64), typed(events(1, 0), tI8), cohorts("1", "2"), ages(1.0, 1.0)},
			good: []string{"42", "-7"},
		},
		{
			name: "uint64 ids, float32 time, large_utf8 cohort",
			cols: []col{typed(ids(1, 2), tU64), typed(times(1.5, -0.5), tF32), events(true, false), typed(cohorts("1", "2"), tLarge), ages(1.0, 1.0)},
			good: []string{"1"},
			dead: map[int]string{1: ReasonInvalidTime},
		},
		{
			name: "first failing field in check order wins",
			cols: []col{ids(""), times(-1.0), events(true), cohorts("zzz"), ages(nan)},
			dead: map[int]string{0: ReasonInvalidID},
		},
		{
			name: "missing required column",
			cols: []col{ids("a", "b"), times(1.0, 2.0), events(true, true), ages(1.0, 1.0)},
			dead: map[int]string{0: ReasonMissingField, 1: ReasonMissingField},
		},
		{
			name: "missing covariate column",
			cols: []col{ids("a"), times(1.0), events(true), cohorts("1")},
			dead: map[int]string{0: ReasonMissingField},
		},
		{
			name: "wrong type: time as utf8",
			cols: []col{ids("a", "b"), typed(times("1", "2"), tString), events(true, true), cohorts("1", "1"), ages(1.0, 1.0)},
			dead: map[int]string{0: ReasonWrongSchema, 1: ReasonWrongSchema},
		},
		{
			name: "wrong type: event as utf8",
			cols: []col{ids("a"), times(1.0), typed(events("1"), tString), cohorts("1"), ages(1.0)},
			dead: map[int]string{0: ReasonWrongSchema},
		},
		{
			name: "wrong schema name in metadata (sanitized data fed back as input)",
			md:   map[string]string{MetaSchema: SanitizedSchemaName},
			cols: []col{ids("a"), times(1.0), events(true), cohorts("1"), ages(1.0)},
			dead: map[int]string{0: ReasonWrongSchema},
		},
		{
			name: "time unit in metadata differs from the configured one",
			md:   map[string]string{MetaTimeUnit: "hours"},
			cols: []col{ids("a"), times(1.0), events(true), cohorts("1"), ages(1.0)},
			dead: map[int]string{0: ReasonWrongSchema},
		},
		{
			name: "duplicate column name",
			cols: []col{ids("a"), times(1.0), times(2.0), events(true), cohorts("1"), ages(1.0)},
			dead: map[int]string{0: ReasonWrongSchema},
		},
		{
			name: "site and observed_at: null site or observed_at is missing, bad string invalid",
			cols: []col{ids("a", "b", "c", "d"), times(1.0, 2.0, 3.0, 4.0), events(true, true, true, true), cohorts("1", "1", "1", "1"), ages(1.0, 1.0, 1.0, 1.0),
				{"site", tString, []any{"s1", nil, "s2", "s3"}}, {"observed_at", tString, []any{"2024-03-01T11:30:00Z", "2024-03-01", nil, "yesterday"}}},
			good: []string{"a"},
			dead: map[int]string{1: ReasonMissingField, 2: ReasonMissingField, 3: ReasonInvalidObservedAt},
		},
		{
			name: "observed_at as timestamp[ms, Europe/Paris] and site as int",
			cols: []col{ids("a"), times(1.0), events(false), cohorts("2"), ages(1.0),
				{"site", tI32, []any{3}}, {"observed_at", tTSms, []any{obsT}}},
			good: []string{"a"},
		},
		{
			name: "extra columns of other types are ignored",
			cols: []col{ids("a"), times(1.0), events(false), cohorts("2"), ages(1.0), {"notes", arrow.BinaryTypes.Binary, []any{[]byte("x")}}},
			good: []string{"a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := checkedMem(t)
			v := newTestValidator(t, testSpec(), mem)
			rec := mkRecord(t, mem, tc.md, tc.cols...)
			defer rec.Release()
			out, dead := v.Validate(rec)
			defer out.Release()
			rows := readCanonical(t, out, 1)
			var gotGood []string
			for _, r := range rows {
				gotGood = append(gotGood, r.ID)
			}
			if !reflect.DeepEqual(gotGood, tc.good) {
				t.Errorf("good ids = %v, want %v", gotGood, tc.good)
			}
			got := map[int]string{}
			for _, d := range dead {
				got[d.RowIndex] = d.Reason
				if d.Detail == "" {
					t.Errorf("row %d: empty detail", d.RowIndex)
				}
				if d.Row == nil {
					t.Errorf("row %d: nil Row", d.RowIndex)
				}
				if _, err := json.Marshal(d); err != nil {
					t.Errorf("row %d: marshal: %v", d.RowIndex, err)
				}
			}
			want := tc.dead
			if want == nil {
				want = map[int]string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("dead = %v, want %v", got, want)
			}
			// Never silently dropped: every input row is either good or dead.
			if int(out.NumRows())+len(dead) != int(rec.NumRows()) {
				t.Errorf("%d good + %d dead != %d rows", out.NumRows(), len(dead), rec.NumRows())
			}
		})
	}
}

func TestValidateCanonicalValues(t *testing.T) {
	t.Parallel()
	mem, spec, v := testValidator(t)
	paris, _ := time.LoadLocation("Europe/Paris")
	obsT := time.Date(2024, 3, 1, 12, 30, 0, 0, paris)
	rec := mkRecord(t, mem, nil,
		typed(ids(7, 8, 9), tI64), typed(times(3, 4, -1), tI32), typed(events(1, 0, 1), tI64),
		typed(cohorts("control", "1", "1"), tString), typed(ages(61, 62, 63), tI64),
		col{"site", tDictS, []any{"north", "south", "north"}}, col{"observed_at", tTSms, []any{obsT, obsT, obsT}})
	defer rec.Release()
	out, dead := v.Validate(rec)
	defer out.Release()
	if len(dead) != 1 || dead[0].RowIndex != 2 || dead[0].Reason != ReasonInvalidTime {
		t.Fatalf("dead = %+v", dead)
	}
	if !strings.Contains(dead[0].Detail, `"time"`) {
		t.Errorf("detail %q does not name the field", dead[0].Detail)
	}
	// site came dictionary-encoded: it stays a dictionary (issue 21)
	if !out.Schema().Equal(canonicalSchema(spec, true, true, true)) {
		t.Fatalf("schema %v, want canonical", out.Schema())
	}
	md := out.Schema().Metadata()
	if got, _ := md.GetValue(MetaSchema); got != InputSchemaName {
		t.Errorf("schema metadata %q", got)
	}
	if got, _ := md.GetValue(MetaTimeUnit); got != "days" {
		t.Errorf("time unit metadata %q", got)
	}
	want := []canonRow{
		{ID: "7", Time: 3, Event: true, Cohort: "control", Covs: []float64{61}, Site: "north", ObsUS: obsT.UnixMicro()},
		{ID: "8", Time: 4, Event: false, Cohort: "1", Covs: []float64{62}, Site: "south", ObsUS: obsT.UnixMicro()},
	}
	if got := readCanonical(t, out, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("rows = %+v\nwant %+v", got, want)
	}
	// The cohort dictionary is exactly Spec.Cohorts, so index == label code.
	d := out.Column(ColCohort).(*array.Dictionary)
	dict := d.Dictionary().(*array.String)
	if dict.Len() != len(spec.Cohorts) {
		t.Fatalf("dictionary has %d labels", dict.Len())
	}
	for i, l := range spec.Cohorts {
		if dict.Value(i) != l {
			t.Errorf("dictionary[%d] = %q, want %q", i, dict.Value(i), l)
		}
	}
	if got := d.Indices().(*array.Int32).Int32Values(); !reflect.DeepEqual(got, []int32{2, 0}) {
		t.Errorf("codes = %v, want [2 0]", got)
	}
}

// The zero-copy path (every row good, canonical types) and the gather path
// must give identical records.
func TestValidateZeroCopyMatchesGather(t *testing.T) {
	t.Parallel()
	mem, _, v := testValidator(t)
	good := mkRecord(t, mem, nil, ids("a", "b"), times(1.0, 2.0), events(true, false), cohorts("2", "1"), ages(3.0, 4.0))
	defer good.Release()
	mixed := mkRecord(t, mem, nil, ids("a", "zz", "b"), times(1.0, -1.0, 2.0), events(true, true, false), cohorts("2", "1", "1"), ages(3.0, 0.0, 4.0))
	defer mixed.Release()
	o1, d1 := v.Validate(good)
	defer o1.Release()
	o2, d2 := v.Validate(mixed)
	defer o2.Release()
	if len(d1) != 0 || len(d2) != 1 {
		t.Fatalf("dead %d, %d", len(d1), len(d2))
	}
	if !array.RecordEqual(o1, o2) {
		t.Errorf("zero-copy and gathered records differ:\n%v\n%v", o1, o2)
	}
	if o1.Column(ColTime) != good.Column(1) {
		t.Errorf("expected the time column to be passed through without a copy")
	}
}

func TestValidateEmptyAndNil(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	v := newTestValidator(t, testSpec(), mem)
	rec := mkRecord(t, mem, nil, ids(), times(), events(), cohorts(), ages())
	defer rec.Release()
	out, dead := v.Validate(rec)
	defer out.Release()
	if out.NumRows() != 0 || len(dead) != 0 {
		t.Errorf("empty: %d rows, %d dead", out.NumRows(), len(dead))
	}
	out2, dead2 := v.Validate(nil)
	defer out2.Release()
	if out2 == nil || out2.NumRows() != 0 || len(dead2) != 0 {
		t.Errorf("nil record: %v, %d dead", out2, len(dead2))
	}
}

func TestValidatorConcurrent(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	v := newTestValidator(t, testSpec(), mem)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for it := 0; it < 50; it++ {
				rec := mkRecord(t, mem, nil, ids("a", "b", "a"), times(1.0, float64(g), 2.0), events(true, false, true), cohorts("1", "2", "1"), ages(1.0, 2.0, 3.0))
				out, dead := v.Validate(rec)
				if out.NumRows() != 2 || len(dead) != 1 || dead[0].Reason != ReasonDuplicateID {
					errs <- "unexpected result"
				}
				out.Release()
				rec.Release()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	ok := testSpec()
	cases := []struct {
		name    string
		mutate  func(*Spec)
		wantErr string
	}{
		{"valid", func(*Spec) {}, ""},
		{"no cohorts", func(s *Spec) { s.Cohorts = nil }, "at least one label"},
		{"empty label", func(s *Spec) { s.Cohorts = []string{"a", ""} }, "empty label"},
		{"duplicate label", func(s *Spec) { s.Cohorts = []string{"a", "a"} }, "repeats"},
		{"no time unit", func(s *Spec) { s.TimeUnit = " " }, "time_unit"},
		{"covariate clashes with canonical", func(s *Spec) { s.Covariates = []string{"site"} }, "clashes"},
		{"covariate is an input column", func(s *Spec) { s.Columns.Time = "days"; s.Covariates = []string{"days"} }, "input column"},
		{"duplicate covariate", func(s *Spec) { s.Covariates = []string{"a", "a"} }, "repeats"},
		{"duplicate column names", func(s *Spec) { s.Columns.Event = "time" }, "also used"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			s.Cohorts = append([]string(nil), ok.Cohorts...)
			tc.mutate(&s)
			err := s.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
	if _, err := NewValidator(Spec{}, nil); err == nil {
		t.Error("NewValidator accepted an empty spec")
	}
}

func TestCustomColumnNames(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	spec := Spec{Cohorts: []string{"A", "B"}, TimeUnit: "months",
		Columns: Columns{ID: "patient", Time: "months", Event: "status", Cohort: "arm"}}
	v := newTestValidator(t, spec, mem)
	rec := mkRecord(t, mem, nil, col{"patient", tString, []any{"p1"}}, col{"months", tF64, []any{2.0}},
		col{"status", tBool, []any{true}}, col{"arm", tString, []any{"B"}})
	defer rec.Release()
	out, dead := v.Validate(rec)
	defer out.Release()
	if len(dead) != 0 || out.NumRows() != 1 {
		t.Fatalf("dead %+v", dead)
	}
	if r := readCanonical(t, out, 0)[0]; r.ID != "p1" || r.Cohort != "B" || r.Time != 2 {
		t.Errorf("row %+v", r)
	}
	ren := spec.RenameToInput()
	if ren["id"] != "patient" || ren["cohort"] != "arm" || ren["site"] != "site" {
		t.Errorf("rename %v", ren)
	}
}

func TestBuildCanonical(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	spec := testSpec()
	ts := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	rows := Rows{ID: []string{"a", "b"}, Time: []float64{1, 2}, Event: []bool{true, false}, Cohort: []int32{2, 0},
		Covariates: [][]float64{{10, 20}}, Site: []string{"x", "y"}, ObservedAt: []time.Time{ts, ts}}
	rec, err := BuildCanonical(spec, rows, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if !rec.Schema().Equal(CanonicalSchema(spec, true, true)) {
		t.Fatalf("schema %v", rec.Schema())
	}
	got := readCanonical(t, rec, 1)
	if got[0].Cohort != "control" || got[1].Cohort != "1" || got[1].ObsUS != ts.UnixMicro() || got[0].Site != "x" {
		t.Errorf("rows %+v", got)
	}
	// A canonical record validates to itself.
	v := newTestValidator(t, spec, mem)
	out, dead := v.Validate(rec)
	defer out.Release()
	if len(dead) != 0 || !array.RecordEqual(out, rec) {
		t.Errorf("canonical record did not validate to itself: %d dead", len(dead))
	}
	bad := []struct {
		name string
		mut  func(*Rows)
	}{
		{"length", func(r *Rows) { r.Time = r.Time[:1] }},
		{"dup id", func(r *Rows) { r.ID = []string{"a", "a"} }},
		{"nan time", func(r *Rows) { r.Time = []float64{nan, 1} }},
		{"cohort range", func(r *Rows) { r.Cohort = []int32{3, 0} }},
		{"covariate count", func(r *Rows) { r.Covariates = nil }},
		{"covariate inf", func(r *Rows) { r.Covariates = [][]float64{{inf, 1}} }},
		{"site length", func(r *Rows) { r.Site = []string{"x"} }},
	}
	for _, b := range bad {
		r := rows
		b.mut(&r)
		if rec, err := BuildCanonical(spec, r, mem); err == nil {
			rec.Release()
			t.Errorf("%s: no error", b.name)
		}
	}
}
