package plotstest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/crc32"
	"image/png"
	"io"
	"os"
	"strings"
	"testing"
)

// CheckPNG fails t unless path is a PNG at least 1600 px wide
// (publication width), whole: every chunk's CRC holds, IHDR first, IEND
// last. Outside the race detector it also inflates the image data
// (pngRows: every row there, each of a known filter, the zlib checksum
// right); under it (where that takes seconds) the CRCs show that the bytes
// are the ones the encoder wrote.
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
		if err := pngRows(b); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// pngRows checks the image data of a PNG whose chunks pngChunks accepted:
// the IDAT chunks' zlib stream inflates with its Adler-32 checksum right,
// to exactly one row per line of the image, each row's filter byte one of
// PNG's five. That is everything png.Decode checks of a non-interlaced,
// non-paletted image but the arithmetic of undoing the filters, at about a
// ninth of its CPU; an interlaced or paletted image is decoded.
func pngRows(b []byte) error {
	b = b[8:] // the signature
	ihdr := b[8 : 8+binary.BigEndian.Uint32(b)]
	if len(ihdr) != 13 {
		return fmt.Errorf("IHDR of %d bytes", len(ihdr))
	}
	width, height := uint64(binary.BigEndian.Uint32(ihdr)), uint64(binary.BigEndian.Uint32(ihdr[4:]))
	depth, colour, interlace := uint64(ihdr[8]), ihdr[9], ihdr[12]
	channels := map[byte]uint64{0: 1, 2: 3, 4: 2, 6: 4}[colour]
	if interlace != 0 || channels == 0 || (depth != 8 && depth != 16) {
		_, err := png.Decode(bytes.NewReader(append([]byte("\x89PNG\r\n\x1a\n"), b...)))
		return err
	}
	var data []byte
	for len(b) >= 12 {
		n := binary.BigEndian.Uint32(b)
		if string(b[4:8]) == "IDAT" {
			data = append(data, b[8:8+n]...)
		}
		b = b[12+n:]
	}
	z, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("image data: %w", err)
	}
	stride := 1 + width*channels*depth/8
	row := make([]byte, stride)
	for y := range height {
		if _, err := io.ReadFull(z, row); err != nil {
			return fmt.Errorf("image data, row %d of %d: %w", y, height, err)
		}
		if row[0] > 4 {
			return fmt.Errorf("row %d: filter type %d", y, row[0])
		}
	}
	// The stream must end here, and its checksum hold (read to EOF).
	if n, err := io.Copy(io.Discard, z); err != nil || n != 0 {
		return fmt.Errorf("image data: %d bytes after the last row (%v)", n, err)
	}
	return nil
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
