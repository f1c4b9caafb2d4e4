package plots

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Curve is one survival curve: S(t) steps at Time (S = 1 before the first).
type Curve struct {
	Label        string
	Time, Surv   []float64
	Lower, Upper []float64 // optional band
	Dashed       bool
}

var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255},
}

func steps(t, s []float64, start float64) plotter.XYs {
	pts := plotter.XYs{{X: 0, Y: start}}
	prev := start
	for i := range t {
		if i >= len(s) {
			break
		}
		pts = append(pts, plotter.XY{X: t[i], Y: prev}, plotter.XY{X: t[i], Y: s[i]})
		prev = s[i]
	}
	return pts
}

// WriteKM writes the curves to path (.png or .svg).
func WriteKM(path, title, xlabel string, curves []Curve) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("plot %s: want a .png or .svg file", path)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "survival probability"
	p.Y.Min, p.Y.Max = 0, 1.02
	p.Legend.Top = true
	for i, c := range curves {
		col := palette[i%len(palette)]
		line, err := plotter.NewLine(steps(c.Time, c.Surv, 1))
		if err != nil {
			return fmt.Errorf("plot %s: %w", c.Label, err)
		}
		line.Color = col
		line.Width = vg.Points(1.5)
		if c.Dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(line)
		p.Legend.Add(c.Label, line)
		for _, band := range [][]float64{c.Lower, c.Upper} {
			if len(band) != len(c.Time) {
				continue
			}
			bl, err := plotter.NewLine(steps(c.Time, band, 1))
			if err != nil {
				return fmt.Errorf("plot %s band: %w", c.Label, err)
			}
			bl.Color = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 90}
			bl.Width = vg.Points(0.6)
			p.Add(bl)
		}
	}
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}
