package plots

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/dpsurv/dpsurv/internal/benchtest"
)

// drawnPNGCanvas is a two-cohort KM figure drawn on a PNG canvas.
func drawnPNGCanvas(tb testing.TB) vgimg.PngCanvas {
	tb.Helper()
	var cohorts []KMCohort
	for c, label := range []string{"A", "B"} {
		k := KMCohort{Label: label, End: 400}
		for i := 0; i < 40; i++ {
			k.Time = append(k.Time, float64(10*i))
			k.Surv = append(k.Surv, math.Exp(-float64(i*(c+1))/30))
			k.NRisk = append(k.NRisk, float64(100-2*i))
		}
		cohorts = append(cohorts, k)
	}
	fig, err := BuildKM(KMSpec{Title: "t", TimeUnit: "days", Cohorts: cohorts})
	if err != nil {
		tb.Fatal(err)
	}
	cw, err := newCanvas("f.png", fig.Height())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := fig.Draw(draw.New(cw)); err != nil {
		tb.Fatal(err)
	}
	return cw.(vgimg.PngCanvas)
}

// TestPNGSamePixelsAsDefaultLevel: writeTo's PNG (encodeOpaquePNG's: a
// figure is opaque) decodes to the pixels of the default-level one that
// vgimg writes.
func TestPNGSamePixelsAsDefaultLevel(t *testing.T) {
	pc := drawnPNGCanvas(t)
	var def, fast bytes.Buffer
	if _, err := pc.WriteTo(&def); err != nil {
		t.Fatal(err)
	}
	if err := writeTo(&fast, pc); err != nil {
		t.Fatal(err)
	}
	defLen, fastLen := def.Len(), fast.Len()
	a, err := png.Decode(&def)
	if err != nil {
		t.Fatal(err)
	}
	b, err := png.Decode(&fast)
	if err != nil {
		t.Fatal(err)
	}
	ra, okA := a.(*image.RGBA)
	rb, okB := b.(*image.RGBA)
	if !okA || !okB || ra.Bounds() != rb.Bounds() || ra.Bounds().Dx() < 1000 {
		t.Fatalf("decoded %T %v and %T %v", a, a.Bounds(), b, b.Bounds())
	}
	if !bytes.Equal(ra.Pix, rb.Pix) {
		t.Fatal("the fast level's pixels differ from the default level's")
	}
	t.Logf("%d bytes at the default level, %d at the fast one", defLen, fastLen)
}

// BenchmarkPNGEncode: encoding one figure (1800 px wide) at png.Encode's
// default level, as vgimg does, and with writeTo, in turn in every
// iteration: their CPU per figure (default-cpu-ms/op, fast-cpu-ms/op) and
// the ratio fast/default-cpu come from one run on a loaded machine.
func BenchmarkPNGEncode(b *testing.B) {
	pc := drawnPNGCanvas(b)
	var img image.Image = pc.Image()
	encode := [2]func() error{
		func() error { return png.Encode(io.Discard, img) },
		func() error { return writeTo(io.Discard, pc) },
	}
	var cpu [2]int64
	for b.Loop() {
		for k, f := range encode {
			c0 := benchtest.ProcessCPU()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			cpu[k] += benchtest.ProcessCPU() - c0
		}
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 / float64(b.N) }
	b.ReportMetric(ms(cpu[0]), "default-cpu-ms/op")
	b.ReportMetric(ms(cpu[1]), "fast-cpu-ms/op")
	if cpu[0] > 0 {
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "fast/default-cpu")
	}
}

// TestOpaquePNG: encodeOpaquePNG writes an opaque image as an RGB PNG that
// decodes to the same pixels (every byte value in every channel, a
// sub-image whose rows do not start at the buffer's start); an image with one
// pixel not opaque is left to png.Encoder (nothing written).
func TestOpaquePNG(t *testing.T) {
	full := image.NewRGBA(image.Rect(0, 0, 1700, 40))
	for i := range full.Pix {
		full.Pix[i] = byte(i*7 + i/4093)
		if i%4 == 3 {
			full.Pix[i] = 0xff
		}
	}
	img := full.SubImage(image.Rect(3, 2, 1605, 37)).(*image.RGBA)
	var buf bytes.Buffer
	if done, err := encodeOpaquePNG(&buf, img); !done || err != nil {
		t.Fatalf("opaque image: done %v, err %v", done, err)
	}
	got, err := png.Decode(&buf) // which checks every chunk's CRC
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if got.Bounds().Dx() != b.Dx() || got.Bounds().Dy() != b.Dy() {
		t.Fatalf("decoded %v, want %v", got.Bounds(), b)
	}
	for y := range b.Dy() {
		for x := range b.Dx() {
			if w, g := img.RGBAAt(b.Min.X+x, b.Min.Y+y), color.RGBAModel.Convert(got.At(x, y)); w != g {
				t.Fatalf("pixel (%d, %d) = %v, want %v", x, y, g, w)
			}
		}
	}

	img.Pix[img.PixOffset(b.Max.X-1, b.Max.Y-1)+3] = 0xfe
	buf.Reset()
	if done, err := encodeOpaquePNG(&buf, img); done || err != nil || buf.Len() != 0 {
		t.Fatalf("one pixel not opaque: done %v, err %v, %d bytes written", done, err, buf.Len())
	}
}
