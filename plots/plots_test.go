package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteKM(t *testing.T) {
	dir := t.TempDir()
	c := []Curve{{Label: "A", Time: []float64{1, 2, 5}, Surv: []float64{0.9, 0.7, 0.4}, Lower: []float64{0.8, 0.6, 0.3}, Upper: []float64{0.95, 0.8, 0.5}},
		{Label: "B", Time: []float64{2, 3}, Surv: []float64{0.8, 0.5}, Dashed: true}}
	for _, name := range []string{"km.png", "km.svg"} {
		p := filepath.Join(dir, name)
		if err := WriteKM(p, "test", "days", c); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 100 {
			t.Fatalf("%s: %v, %d bytes", name, err, len(b))
		}
		if name == "km.png" && !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Fatal("not a PNG")
		}
	}
	if err := WriteKM(filepath.Join(dir, "x.pdfx"), "t", "d", c); err == nil {
		t.Fatal("bad extension accepted")
	}
}
