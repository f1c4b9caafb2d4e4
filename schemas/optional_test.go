package schemas

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
)

// Issue 21, defect 5: a declared-public optional column that a message
// lacks is null in the output (NullableSite) rather than dead-lettering the
// message; required (RequireSite), the whole-message dead letter counts the
// message's rows. A skipped column (outside the configuration) is not read.
func TestOptionalColumns(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	base := Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days"}
	required := []col{
		{"id", arrow.BinaryTypes.String, []any{"a", "b", "c"}},
		{"time", arrow.PrimitiveTypes.Float64, []any{1.0, 2.0, 3.0}},
		{"event", arrow.FixedWidthTypes.Boolean, []any{true, false, true}},
		{"cohort", arrow.BinaryTypes.String, []any{"1", "2", "1"}},
	}
	noSite := mkRecord(t, mem, nil, required...)
	defer noSite.Release()
	withSite := mkRecord(t, mem, nil, append(required,
		col{"site", arrow.BinaryTypes.String, []any{"north", nil, "south"}},
		col{"observed_at", arrow.BinaryTypes.String, []any{"not a time", "2024-01-01", nil}})...)
	defer withSite.Release()
	encode := func(rec arrow.Record) []byte {
		b, err := arrowipc.Encode(rec, mem)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// decodeIPC is rec decoded by a validator of base with set applied,
	// the output released when the subtest ends.
	decodeIPC := func(t *testing.T, set func(*Spec), rec arrow.Record) (arrow.Record, []DeadLetter) {
		spec := base
		set(&spec)
		out, dead := newTestValidator(t, spec, mem).DecodeIPC(encode(rec))
		t.Cleanup(out.Release)
		return out, dead
	}

	t.Run("nullable, absent: null column", func(t *testing.T) {
		spec := base
		spec.NullableSite, spec.SkipObservedAt = true, true
		v := newTestValidator(t, spec, mem)
		for _, msg := range [][]byte{encode(noSite), []byte(`{"id":"a","time":1,"event":1,"cohort":"1"}
{"id":"b","time":2,"event":0,"cohort":"2"}
{"id":"c","time":3,"event":1,"cohort":"1"}`)} {
			var out arrow.Record
			var dead []DeadLetter
			if msg[0] == '{' {
				out, dead = v.DecodeJSON(msg)
			} else {
				out, dead = v.DecodeIPC(msg)
			}
			if len(dead) != 0 || out.NumRows() != 3 {
				t.Fatalf("dead %+v, %d rows", dead, out.NumRows())
			}
			i := SiteIndex(out.Schema())
			if i < 0 || out.Column(i).NullN() != 3 || !out.Schema().Field(i).Nullable {
				t.Fatalf("site column %d of %v: want all 3 null, nullable", i, out.Schema())
			}
			out.Release()
		}
	})
	t.Run("nullable, present with a null: kept null", func(t *testing.T) {
		out, dead := decodeIPC(t, func(s *Spec) { s.NullableSite, s.SkipObservedAt = true, true }, withSite)
		if len(dead) != 0 || out.NumRows() != 3 {
			t.Fatalf("dead %+v, %d rows", dead, out.NumRows())
		}
		s := out.Column(SiteIndex(out.Schema())).(*array.String)
		if s.Value(0) != "north" || !s.IsNull(1) || s.Value(2) != "south" {
			t.Errorf("site %v", s)
		}
		if ObservedAtIndex(out.Schema()) >= 0 {
			t.Error("observed_at is outside the configuration but in the output")
		}
	})
	t.Run("required, absent: whole message, rows counted", func(t *testing.T) {
		_, dead := decodeIPC(t, func(s *Spec) { s.RequireSite = true }, noSite)
		if len(dead) != 1 || dead[0].RowIndex != -1 || dead[0].Reason != ReasonMissingField || dead[0].Rows() != 3 {
			t.Fatalf("dead %+v: want one whole-message missing_field of 3 rows", dead)
		}
	})
	t.Run("skipped: not read, not validated", func(t *testing.T) {
		out, dead := decodeIPC(t, func(s *Spec) { s.SkipSite, s.SkipObservedAt = true, true }, withSite)
		// observed_at "not a time" would be invalid_observed_at, site null missing_field
		if len(dead) != 0 || out.NumRows() != 3 || out.NumCols() != 4 {
			t.Fatalf("dead %+v, %d rows, schema %v", dead, out.NumRows(), out.Schema())
		}
	})
	t.Run("conflicting flags refused", func(t *testing.T) {
		spec := base
		spec.SkipSite, spec.RequireSite = true, true
		if _, err := NewValidator(spec, mem); err == nil {
			t.Error("skip and require accepted together")
		}
	})
}

// Issue 21, defect 2: a dead letter carries the row's configured fields and
// a bounded prefix of anything else, for Arrow and JSON input alike. On the
// code before, each of 100 rows carried the whole 900 KB value.
func TestDeadLetterRowBounded(t *testing.T) {
	t.Parallel()
	mem := checkedMem(t)
	spec := Spec{Cohorts: []string{"1"}, TimeUnit: "days", SkipSite: true, SkipObservedAt: true}
	v := newTestValidator(t, spec, mem)
	big := strings.Repeat("n", 900_000)
	rec := mkRecord(t, mem, nil,
		col{"id", arrow.BinaryTypes.String, []any{"a"}},
		col{"time", arrow.PrimitiveTypes.Float64, []any{1.0}},
		col{"event", arrow.FixedWidthTypes.Boolean, []any{true}},
		col{"cohort", arrow.BinaryTypes.String, []any{"unknown"}},
		col{"site", arrow.BinaryTypes.String, []any{big}},
		col{"note", arrow.BinaryTypes.String, []any{big}})
	defer rec.Release()
	msg, err := arrowipc.Encode(rec, mem)
	if err != nil {
		t.Fatal(err)
	}
	jsonMsg := []byte(`{"id":"a","time":1,"event":1,"cohort":"unknown","site":"` + big + `","note":"` + big + `","list":[` + strings.Repeat("1,", 100_000) + `1]}`)
	for name, decode := range map[string]func() (arrow.Record, []DeadLetter){
		"arrow": func() (arrow.Record, []DeadLetter) { return v.DecodeIPC(msg) },
		"json":  func() (arrow.Record, []DeadLetter) { return v.DecodeJSON(jsonMsg) },
	} {
		out, dead := decode()
		out.Release()
		if len(dead) != 1 || dead[0].Reason != ReasonUnknownCohort {
			t.Fatalf("%s: dead %v", name, CountByReason(dead))
		}
		b, err := dead[0].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 4096 || !strings.Contains(string(b), `"id":"a"`) || !strings.Contains(string(b), "(900000 bytes, cut)") {
			t.Errorf("%s: dead letter of %d bytes: %.600s", name, len(b), b)
		}
	}
}
