package audit

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/schemas/schemastest"
)

func TestScanLabelsAndReadFile(t *testing.T) {
	csv := "pid,days,status,grp\n1,10,1,10\n2,3.4,0,2\n3,7,1,1\n4,x,1,2\n"
	p := schemastest.WriteFile(t, "in.csv", csv)
	labels, err := ScanLabels(p, "grp")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(labels, []string{"1", "2", "10"}) {
		t.Errorf("labels %v, want numeric order", labels)
	}
	if l, _ := ScanLabels(schemastest.WriteFile(t, "s.csv", "cohort\nb\na\nb\n"), "cohort"); !reflect.DeepEqual(l, []string{"a", "b"}) {
		t.Errorf("string labels %v", l)
	}
	if l, _ := ScanLabels(schemastest.WriteFile(t, "s.jsonl", `{"cohort":"b"}`+"\n"+`{"cohort":3}`+"\n"), "cohort"); !reflect.DeepEqual(l, []string{"3", "b"}) {
		t.Errorf("json labels %v", l)
	}
	if _, err := ScanLabels(p, "nope"); err == nil {
		t.Error("missing column accepted")
	}
	spec := schemas.Spec{Cohorts: labels, TimeUnit: "days",
		Columns: schemas.Columns{ID: "pid", Time: "days", Event: "status", Cohort: "grp"}}
	d, st, err := ReadFile(p, spec)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 3 || st.DeadLettered != 1 || st.RoundedTimes != 1 {
		t.Errorf("stats %+v", st)
	}
	want := Data{Cohorts: labels, ID: []string{"1", "2", "3"}, Time: []int64{10, 3, 7},
		Event: []bool{true, false, true}, Cohort: []int{2, 1, 0}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("data %+v, want %+v", d, want)
	}
}

func TestArrowFieldMetadata(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	md := arrow.NewMetadata([]string{schemas.MetaMechanism, schemas.MetaEpsilon, schemas.MetaWindow}, []string{"te-sanitizer", "0.5", "10"})
	sch := arrow.NewSchema([]arrow.Field{{Name: "days", Type: arrow.PrimitiveTypes.Int64, Metadata: md}}, nil)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 2}, nil)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecord(sch, []arrow.Array{col}, 2)
	col.Release()
	defer rec.Release()
	for _, name := range []string{"x.arrow", "x.arrows"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name)
			if err := schemas.WriteFile(p, rec, nil, mem); err != nil {
				t.Fatal(err)
			}
			got, _, err := ArrowFieldMetadata(p, "days")
			if err != nil {
				t.Fatal(err)
			}
			if got[schemas.MetaEpsilon] != "0.5" || got[schemas.MetaWindow] != "10" || got[schemas.MetaMechanism] != "te-sanitizer" {
				t.Errorf("metadata %v", got)
			}
			if _, _, err := ArrowFieldMetadata(p, "time"); err == nil {
				t.Error("missing field accepted")
			}
			labels, err := ScanLabels(p, "days")
			if err != nil || !reflect.DeepEqual(labels, []string{"1", "2"}) {
				t.Errorf("arrow labels %v, %v", labels, err)
			}
		})
	}
	if _, _, err := ArrowFieldMetadata(schemastest.WriteFile(t, "bad.arrow", "ARROW1 not really"), "days"); err == nil {
		t.Error("corrupt file accepted")
	}
}
