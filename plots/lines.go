package plots

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a line plot.
type Series struct {
	Label string
	X, Y  []float64
}

// WriteLines writes a line plot with points (.png or .svg); logX uses a
// logarithmic x axis.
func WriteLines(path, title, xlabel, ylabel string, logX bool, series []Series) error {
	cw, err := newCanvas(path, FigureHeight)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top = true
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plot %s: %d x for %d y", s.Label, len(s.X), len(s.Y))
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			pts[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Label, err)
		}
		col := CohortColour(i)
		line.Dashes = CohortDashes(i)
		line.Color, points.Color = col, col
		line.Width = vg.Points(1.5)
		p.Add(line, points)
		p.Legend.Add(s.Label, line, points)
	}
	p.Draw(draw.New(cw))
	return writeCanvas(path, cw)
}
