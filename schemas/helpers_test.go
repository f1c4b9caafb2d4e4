package schemas

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
)

// checkedMem returns a checked allocator that must be back at zero when the
// test ends.
func checkedMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	return arrowipctest.CheckedMem(t)
}

// writeFile writes rec to path with NewFileWriter (the format by path's
// extension), failing the test on any error, and returns the closed writer.
func writeFile(t testing.TB, path string, rec arrow.Record, mem memory.Allocator) *FileWriter {
	t.Helper()
	w, err := NewFileWriter(path, rec.Schema(), nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

func testSpec() Spec {
	return Spec{
		Cohorts:    []string{"1", "2", "control"},
		TimeUnit:   "days",
		Covariates: []string{"age"},
	}
}

// testValidator is a validator of testSpec on a checked allocator (back
// at zero when the test ends), with the spec and the allocator.
func testValidator(t testing.TB) (*memory.CheckedAllocator, Spec, *Validator) {
	t.Helper()
	mem := checkedMem(t)
	spec := testSpec()
	return mem, spec, newTestValidator(t, spec, mem)
}

func newTestValidator(t testing.TB, spec Spec, mem memory.Allocator) *Validator {
	t.Helper()
	v, err := NewValidator(spec, mem)
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	return v
}

// col is one column of a hand-built record: values are Go values or nil for
// null.
type col struct {
	name string
	typ  arrow.DataType
	vals []any
}

// mkRecord builds a record from columns of arbitrary types.
func mkRecord(t testing.TB, mem memory.Allocator, md map[string]string, cols ...col) arrow.Record {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
	}
	var meta *arrow.Metadata
	if md != nil {
		m := arrow.MetadataFrom(md)
		meta = &m
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, meta))
	defer b.Release()
	for i, c := range cols {
		for _, v := range c.vals {
			if err := appendAny(b.Field(i), v); err != nil {
				t.Fatalf("column %s: %v", c.name, err)
			}
		}
	}
	return b.NewRecord()
}

func appendAny(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch bb := b.(type) {
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.LargeStringBuilder:
		bb.Append(v.(string))
	case *array.Float64Builder:
		bb.Append(toF(v))
	case *array.Float32Builder:
		bb.Append(float32(toF(v)))
	case *array.Int64Builder:
		bb.Append(int64(toF(v)))
	case *array.Int32Builder:
		bb.Append(int32(toF(v)))
	case *array.Int8Builder:
		bb.Append(int8(toF(v)))
	case *array.Uint64Builder:
		bb.Append(uint64(toF(v)))
	case *array.Uint8Builder:
		bb.Append(uint8(toF(v)))
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.BinaryDictionaryBuilder:
		return bb.AppendString(v.(string))
	case *array.TimestampBuilder:
		unit := bb.Type().(*arrow.TimestampType).Unit
		ts, err := arrow.TimestampFromTime(v.(time.Time), unit)
		if err != nil {
			return err
		}
		bb.Append(ts)
	case *array.Date32Builder:
		bb.Append(arrow.Date32FromTime(v.(time.Time)))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	default:
		return fmt.Errorf("unsupported builder %T", b)
	}
	return nil
}

func toF(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	panic(fmt.Sprintf("toF %T", v))
}

var (
	tString = arrow.BinaryTypes.String
	tLarge  = arrow.BinaryTypes.LargeString
	tF64    = arrow.PrimitiveTypes.Float64
	tF32    = arrow.PrimitiveTypes.Float32
	tI64    = arrow.PrimitiveTypes.Int64
	tI32    = arrow.PrimitiveTypes.Int32
	tI8     = arrow.PrimitiveTypes.Int8
	tU64    = arrow.PrimitiveTypes.Uint64
	tBool   = arrow.FixedWidthTypes.Boolean
	tDictS  = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	tDict32 = CohortType
	tTSms   = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Paris"}
)

// canonicalRows extracts canonical rows for comparisons.
type canonRow struct {
	ID     string
	Time   float64
	Event  bool
	Cohort string
	Covs   []float64
	Site   string
	ObsUS  int64
}

func readCanonical(t testing.TB, rec arrow.Record, ncov int) []canonRow {
	t.Helper()
	s := rec.Schema()
	if s.Field(ColID).Name != "id" || s.Field(ColTime).Name != "time" || s.Field(ColEvent).Name != "event" || s.Field(ColCohort).Name != "cohort" {
		t.Fatalf("not a canonical schema: %v", s)
	}
	ids := rec.Column(ColID).(*array.String)
	times := rec.Column(ColTime).(*array.Float64)
	events := rec.Column(ColEvent).(*array.Boolean)
	cohorts := rec.Column(ColCohort).(*array.Dictionary)
	dict := cohorts.Dictionary().(*array.String)
	site, obs := SiteIndex(s), ObservedAtIndex(s)
	rows := make([]canonRow, rec.NumRows())
	for i := range rows {
		for c := 0; c < int(rec.NumCols()); c++ {
			if rec.Column(c).IsNull(i) {
				t.Fatalf("canonical column %s row %d is null", s.Field(c).Name, i)
			}
		}
		r := canonRow{ID: ids.Value(i), Time: times.Value(i), Event: events.Value(i),
			Cohort: dict.Value(cohorts.GetValueIndex(i))}
		for k := 0; k < ncov; k++ {
			r.Covs = append(r.Covs, rec.Column(ColFirstCovariate+k).(*array.Float64).Value(i))
		}
		if site >= 0 {
			r.Site = siteValue(rec.Column(site), i)
		}
		if obs >= 0 {
			r.ObsUS = int64(rec.Column(obs).(*array.Timestamp).Value(i))
		}
		rows[i] = r
	}
	return rows
}

// siteValue reads a canonical site cell (utf8, or a dictionary of utf8).
func siteValue(a arrow.Array, i int) string {
	if d, ok := a.(*array.Dictionary); ok {
		return d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
	}
	return a.(*array.String).Value(i)
}
