package plotstest

import (
	"encoding/xml"
	"image/png"
	"os"
	"strings"
	"testing"
)

// CheckPNG fails t unless path is a PNG at least 1600 px wide
// (publication width).
func CheckPNG(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if w := img.Bounds().Dx(); w < 1600 {
		t.Fatalf("%s: %d px wide, want >= 1600", path, w)
	}
}

// CheckSVG fails t unless path is well-formed XML with an svg root that
// states its width.
func CheckSVG(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
	}
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if root.XMLName.Local != "svg" || root.Width == "" {
		t.Fatalf("%s: root %v width %q", path, root.XMLName, root.Width)
	}
}

// CheckFigureFile is CheckPNG for a .png path, else CheckSVG.
func CheckFigureFile(t testing.TB, path string) {
	t.Helper()
	if strings.HasSuffix(path, ".png") {
		CheckPNG(t, path)
		return
	}
	CheckSVG(t, path)
}
