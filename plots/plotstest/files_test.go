package plotstest

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

// pngChunks accepts a PNG as the encoder wrote it and refuses one with a
// flipped byte anywhere after the signature, a truncated one and one with
// bytes after IEND.
func TestPNGChunks(t *testing.T) {
	var buf bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
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
