package plotstest

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/crc32"
	"image/png"
	"os"
	"strings"
	"testing"
)

// CheckPNG fails t unless path is a PNG at least 1600 px wide
// (publication width), whole: every chunk's CRC holds, IHDR first, IEND
// last. Outside the race detector it also decodes every pixel; under it
// (where decoding a figure takes seconds) the CRCs show that the bytes are
// the ones the encoder wrote.
func CheckPNG(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pngChunks(b); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if cfg.Width < 1600 {
		t.Fatalf("%s: %d px wide, want >= 1600", path, cfg.Width)
	}
	if !raceDetector {
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// pngChunks checks a PNG's signature and chunk sequence: each chunk's
// CRC-32 (over its type and data), IHDR first, IEND last and nothing after.
func pngChunks(b []byte) error {
	const sig = "\x89PNG\r\n\x1a\n"
	if !bytes.HasPrefix(b, []byte(sig)) {
		return errors.New("no PNG signature")
	}
	b = b[len(sig):]
	for i := 0; ; i++ {
		if len(b) < 12 {
			return errors.New("truncated chunk")
		}
		n := binary.BigEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-12) {
			return errors.New("truncated chunk")
		}
		typ, body := string(b[4:8]), b[4:8+n]
		if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[8+n:]) {
			return fmt.Errorf("chunk %d (%s): CRC mismatch", i, typ)
		}
		if i == 0 && typ != "IHDR" {
			return fmt.Errorf("first chunk %s, want IHDR", typ)
		}
		b = b[12+n:]
		if typ == "IEND" {
			if len(b) != 0 {
				return fmt.Errorf("%d bytes after IEND", len(b))
			}
			return nil
		}
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
