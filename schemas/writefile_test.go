package schemas

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// WriteFile writes a record as a whole file in the format its extension
// names, with the columns renamed, and refuses an unknown extension
// without creating the file.
func TestWriteFile(t *testing.T) {
	mem := checkedMem(t)
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.PrimitiveTypes.Float64}}, nil))
	defer b.Release()
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{1.5, 2}, nil)
	rec := b.NewRecord()
	defer rec.Release()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.csv")
	if err := WriteFile(path, rec, map[string]string{"time": "days"}, mem); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "days\n1.5\n2\n" {
		t.Errorf("x.csv = %q (%v), want the header days and two rows", got, err)
	}
	bad := filepath.Join(dir, "x.txt")
	if err := WriteFile(bad, rec, nil, mem); err == nil {
		t.Error("WriteFile to x.txt: no error")
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("WriteFile to x.txt left a file (%v)", err)
	}
}
