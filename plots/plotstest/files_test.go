package plotstest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"testing"
)

// encodedPNG is png.Encode's PNG of a 40 x 30 image of varied pixels.
func encodedPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pngChunks accepts a PNG as the encoder wrote it and refuses one with a
// flipped byte anywhere after the signature, a truncated one and one with
// bytes after IEND.
func TestPNGChunks(t *testing.T) {
	b := encodedPNG(t)
	if err := pngChunks(b); err != nil {
		t.Fatalf("the encoder's PNG: %v", err)
	}
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x10
		if pngChunks(bad) == nil {
			t.Errorf("byte %d of %d flipped: accepted", i, len(b))
		}
	}
	for _, n := range []int{0, 8, 20, len(b) - 1} {
		if pngChunks(b[:n]) == nil {
			t.Errorf("truncated to %d bytes: accepted", n)
		}
	}
	if pngChunks(append(bytes.Clone(b), 0)) == nil {
		t.Error("a byte after IEND: accepted")
	}
}

// pngOf writes a PNG of colour type 2 (RGB, 8 bits) whose IHDR states
// width and height and whose image data is the zlib stream of raw (filter
// bytes and rows as given), every chunk's CRC right.
func pngOf(t *testing.T, width, height uint32, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		buf.Write(n[:])
		body := append([]byte(typ), data...)
		buf.Write(body)
		binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE(body))
		buf.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = 8, 2
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return buf.Bytes()
}

// pngRows accepts the encoder's PNG and one with every filter type, and
// refuses image data a row short, a row long, with an unknown filter type
// or whose zlib checksum fails.
func TestPNGRows(t *testing.T) {
	if err := pngRows(encodedPNG(t)); err != nil {
		t.Fatalf("the encoder's PNG: %v", err)
	}
	const w, h = 5, 4
	rows := func(n int, filter byte) []byte {
		var raw []byte
		for y := range n {
			raw = append(raw, byte(y)%5)
			raw = append(raw, bytes.Repeat([]byte{byte(y + 1)}, 3*w)...)
		}
		if n > 0 {
			raw[(n-1)*(1+3*w)] = filter
		}
		return raw
	}
	good := pngOf(t, w, h, rows(h, 4))
	if err := pngChunks(good); err != nil {
		t.Fatal(err)
	}
	if err := pngRows(good); err != nil {
		t.Fatalf("every filter type: %v", err)
	}
	if _, err := png.Decode(bytes.NewReader(good)); err != nil {
		t.Fatalf("png.Decode refuses the good PNG: %v", err)
	}
	for name, b := range map[string][]byte{
		"a row short":   pngOf(t, w, h, rows(h-1, 0)),
		"a row long":    pngOf(t, w, h, rows(h+1, 0)),
		"filter type 5": pngOf(t, w, h, rows(h, 5)),
	} {
		if err := pngRows(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// the zlib stream's Adler-32 (its last 4 bytes, before the IDAT CRC)
	bad := bytes.Clone(good)
	iend := bytes.Index(bad, []byte("IEND")) - 4
	bad[iend-5] ^= 1
	binary.BigEndian.PutUint32(bad[iend-4:], crc32.ChecksumIEEE(bad[bytes.Index(bad, []byte("IDAT")):iend-4]))
	if err := pngChunks(bad); err != nil {
		t.Fatalf("the CRC was not repaired: %v", err)
	}
	if err := pngRows(bad); err == nil {
		t.Error("a wrong zlib checksum: accepted")
	}
}
