package eval

// KM figures of the sanitizers evaluation: for each cohort the original
// curve (dashed) and the curve of a mechanism's output (solid) in the same
// colour.

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/dpsurv/dpsurv/survival"
)

var sanPalette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255},
	{255, 127, 14, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255},
}

// sanPair is one cohort's original and released curve.
type sanPair struct {
	label    string
	orig     survival.KMCurve
	released survival.KMCurve
	ok       bool // released curve exists
}

func sanSteps(t, s []float64) plotter.XYs {
	pts := plotter.XYs{{X: 0, Y: 1}}
	prev := 1.0
	for i := range t {
		if i >= len(s) || s[i] != s[i] { // NaN ends the curve
			break
		}
		pts = append(pts, plotter.XY{X: t[i], Y: prev}, plotter.XY{X: t[i], Y: s[i]})
		prev = s[i]
	}
	return pts
}

// sanPlotKM writes a PNG of the pairs.
func sanPlotKM(path, title, xlabel, releasedName string, pairs []sanPair) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "survival probability"
	p.Y.Min, p.Y.Max = 0, 1.02
	p.Legend.Top = true
	for i, pr := range pairs {
		col := sanPalette[i%len(sanPalette)]
		lo, err := plotter.NewLine(sanSteps(pr.orig.Time, pr.orig.Surv))
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		lo.Color = col
		lo.Width = vg.Points(1)
		lo.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(lo)
		p.Legend.Add(pr.label+" original", lo)
		if !pr.ok {
			continue
		}
		lr, err := plotter.NewLine(sanSteps(pr.released.Time, pr.released.Surv))
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		lr.Color = col
		lr.Width = vg.Points(1.6)
		p.Add(lr)
		p.Legend.Add(pr.label+" "+releasedName, lr)
	}
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}
