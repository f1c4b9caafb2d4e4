package plots

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Write renders the figure to path: .png (FigureWidth at FigureDPI, 1800
// px wide) or .svg.
func (f Figure) Write(path string) error {
	cw, err := newCanvas(path, f.Height())
	if err != nil {
		return err
	}
	if _, err := f.Draw(draw.New(cw)); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return writeCanvas(path, cw)
}

// newCanvas is a FigureWidth x height canvas for path's format: .png (at
// FigureDPI, on white) or .svg (fonts embedded).
func newCanvas(path string, height vg.Length) (vg.CanvasWriterTo, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	if strings.ToLower(filepath.Ext(path)) == ".png" {
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(FigureWidth, height), vgimg.UseDPI(FigureDPI),
			vgimg.UseBackgroundColor(color.White))}, nil
	}
	return vgsvg.NewWith(vgsvg.UseWH(FigureWidth, height), vgsvg.EmbedFonts(true)), nil
}

// CheckPath refuses a figure path whose format Write cannot draw (not
// .png or .svg): a command checks it before its work, not after.
func CheckPath(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".svg":
		return nil
	}
	return fmt.Errorf("plot %s: want a .png or .svg file", path)
}

// pngEncoder writes a PNG that encodeOpaquePNG does not (an image not
// opaque) at deflate's fastest level: the same pixels as png.Encode's
// default level for about 0.73 of its CPU, the file about 4% larger.
// encodeOpaquePNG writes a figure for about 0.38 of the default level's
// CPU, the file about 7% larger (BenchmarkPNGEncode; the tests and the
// evaluation pages write hundreds of figures).
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

// writeCanvas writes the drawn canvas to path.
func writeCanvas(path string, cw vg.CanvasWriterTo) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := writeTo(out, cw); err != nil {
		out.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// writeTo encodes the canvas to w: a PNG canvas with encodeOpaquePNG (or
// pngEncoder if not opaque), any other with its own WriteTo.
func writeTo(w io.Writer, cw vg.CanvasWriterTo) error {
	pc, ok := cw.(vgimg.PngCanvas)
	if !ok {
		_, err := cw.WriteTo(w)
		return err
	}
	if rgba, ok := pc.Image().(*image.RGBA); ok {
		if done, err := encodeOpaquePNG(w, rgba); done {
			return err
		}
	}
	b := bufio.NewWriter(w)
	if err := pngEncoder.Encode(b, pc.Image()); err != nil {
		return err
	}
	return b.Flush()
}

func textStyle(size vg.Length, col color.Color) draw.TextStyle {
	return draw.TextStyle{Color: col, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YTop}
}

// Layout is where Draw put the parts of a figure, in canvas coordinates:
// the data area (inside the axes), the legend column (its entries' extent)
// and the number-at-risk table (empty without one).
type Layout struct {
	Data, Legend, Risk vg.Rectangle
}

// Draw renders the figure on c: title and subtitle at the top, the legend
// in a column right of the data, the number-at-risk table under the time
// axis, aligned with its ticks. It returns where each part went.
func (f Figure) Draw(c draw.Canvas) (Layout, error) {
	var lay Layout
	black := color.NRGBA{0, 0, 0, 255}
	pad := vg.Points(10)
	titleSty := textStyle(vg.Points(13), black)
	subSty := textStyle(vg.Points(9), color.NRGBA{0x30, 0x30, 0x30, 255})
	y := c.Max.Y - pad
	if f.Title != "" {
		c.FillText(titleSty, vg.Point{X: c.Min.X + pad, Y: y}, f.Title)
		y -= titleSty.Height(f.Title) + vg.Points(3)
	}
	for _, s := range f.Subtitle {
		sty := subSty
		if strings.HasPrefix(s, "LOW INFORMATION") {
			sty.Color = color.NRGBA{0xA0, 0x20, 0x00, 255}
		}
		for _, line := range wrap(sty, s, c.Max.X-c.Min.X-2*pad) {
			c.FillText(sty, vg.Point{X: c.Min.X + pad, Y: y}, line)
			y -= sty.Height(line) + vg.Points(2)
		}
	}
	top := y - vg.Points(4)

	// Legend column on the right.
	legSty := textStyle(vg.Points(9), black)
	legW := vg.Length(0)
	for _, e := range f.Legend {
		legW = max(legW, legSty.Width(e.Text))
	}
	for _, n := range f.Notes {
		legW = max(legW, legSty.Width(n))
	}
	sample := vg.Points(26)
	// 30% slack: an SVG viewer that substitutes a wider font must not push
	// the legend past the edge.
	legW = min(legW*1.3+sample+vg.Points(10), (c.Max.X-c.Min.X)*0.36)
	legLeft := c.Max.X - pad - legW

	// Risk table rows at the bottom.
	rowH := vg.Points(riskRowH)
	riskH := vg.Length(0)
	if f.Risk != nil {
		riskH = rowH * (vg.Length(len(f.Risk.Rows)) + 1.6)
	}
	bottom := c.Min.Y + pad + riskH

	p := plot.New()
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.X.Min, p.X.Max = 0, f.XMax
	p.Y.Min, p.Y.Max = 0, 1.02
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	var xt []plot.Tick
	for _, t := range f.XTicks {
		xt = append(xt, plot.Tick{Value: t, Label: trimNum(t)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.NRGBA{0xe4, 0xe4, 0xe4, 255}
	grid.Horizontal.Color = grid.Vertical.Color
	p.Add(grid)
	// Room on the left for the risk table's row labels.
	labW := vg.Length(0)
	if f.Risk != nil {
		rs := textStyle(vg.Points(9), black)
		for _, r := range f.Risk.Rows {
			labW = max(labW, rs.Width(r.Label))
		}
		labW += vg.Points(8)
	}
	plotArea := draw.Crop(c, pad+labW, -(c.Max.X - legLeft + pad), bottom-c.Min.Y, -(c.Max.Y - top))
	p.Draw(plotArea)
	dc := p.DataCanvas(plotArea)
	lay.Data = dc.Rectangle
	tx, ty := p.Transforms(&dc)
	toVG := func(pts []Pt) []vg.Point {
		out := make([]vg.Point, len(pts))
		for i, q := range pts {
			out[i] = vg.Point{X: tx(q.X), Y: ty(q.Y)}
		}
		return out
	}
	for _, a := range f.Areas {
		dc.FillPolygon(a.Colour, dc.ClipPolygonXY(toVG(a.Polygon)))
	}
	// Tails and bands first, the solid estimates on top.
	order := map[Role]int{RoleSimultLower: 0, RoleSimultUpper: 0, RoleNoiseTail: 1, RoleParametric: 2, RoleEstimate: 3}
	for pass := 0; pass <= 3; pass++ {
		for _, l := range f.Lines {
			if order[l.Role] != pass {
				continue
			}
			dc.StrokeLines(draw.LineStyle{Color: l.Colour, Width: l.Width, Dashes: l.Dashes}, dc.ClipLinesXY(toVG(l.Points))...)
		}
	}
	for _, m := range f.Marks {
		h := vg.Points(2.5)
		for _, q := range m.Points {
			x, yy := tx(q.X), ty(q.Y)
			if !dc.Contains(vg.Point{X: x, Y: yy}) {
				continue
			}
			dc.StrokeLine2(draw.LineStyle{Color: m.Colour, Width: vg.Points(0.7)}, x, yy-h, x, yy+h)
		}
	}

	// Legend.
	ly := top - vg.Points(4)
	lay.Legend = vg.Rectangle{Min: vg.Point{X: legLeft, Y: ly}, Max: vg.Point{X: legLeft + legW, Y: ly}}
	for _, e := range f.Legend {
		if e.Text == "" && e.Sample == "" {
			ly -= rowH * 0.6
			continue
		}
		mid := ly - rowH/2
		x0, x1 := legLeft, legLeft+sample-vg.Points(6)
		switch e.Sample {
		case "line", "light-line", "dashed":
			c.StrokeLine2(draw.LineStyle{Color: e.Colour, Width: vg.Points(2), Dashes: e.Dashes}, x0, mid, x1, mid)
		case "dotted":
			c.StrokeLine2(draw.LineStyle{Color: e.Colour, Width: vg.Points(0.9), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}, x0, mid+vg.Points(2.5), x1, mid+vg.Points(2.5))
			c.StrokeLine2(draw.LineStyle{Color: e.Colour, Width: vg.Points(0.9), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}, x0, mid-vg.Points(2.5), x1, mid-vg.Points(2.5))
		case "area":
			c.FillPolygon(withAlpha(e.Colour, 60), []vg.Point{{X: x0, Y: mid - vg.Points(4)}, {X: x1, Y: mid - vg.Points(4)}, {X: x1, Y: mid + vg.Points(4)}, {X: x0, Y: mid + vg.Points(4)}})
		case "mark":
			xm := (x0 + x1) / 2
			c.StrokeLine2(draw.LineStyle{Color: e.Colour, Width: vg.Points(0.9)}, x0, mid, x1, mid)
			c.StrokeLine2(draw.LineStyle{Color: e.Colour, Width: vg.Points(0.9)}, xm, mid-vg.Points(3.5), xm, mid+vg.Points(3.5))
		}
		sty := legSty
		sty.YAlign = draw.YCenter
		for i, line := range wrap(sty, e.Text, (legW-sample-vg.Points(10))/1.3) {
			if i > 0 {
				ly -= rowH * 0.9
			}
			c.FillText(sty, vg.Point{X: legLeft + sample, Y: ly - rowH/2}, line)
		}
		ly -= rowH
	}
	lay.Legend.Min.Y = ly
	if len(f.Notes) > 0 {
		ly -= rowH * 0.6
		ns := textStyle(vg.Points(8), color.NRGBA{0x40, 0x40, 0x40, 255})
		for _, n := range f.Notes {
			for _, line := range wrap(ns, n, legW) {
				c.FillText(ns, vg.Point{X: legLeft, Y: ly}, line)
				ly -= ns.Height(line) + vg.Points(1.5)
			}
		}
	}

	// Number-at-risk table, columns under the ticks.
	if f.Risk != nil {
		hs := textStyle(vg.Points(9), black)
		ry := c.Min.Y + pad + riskH
		lay.Risk = vg.Rectangle{Min: vg.Point{X: c.Min.X + pad, Y: c.Min.Y + pad}, Max: vg.Point{X: tx(f.XMax), Y: ry}}
		c.FillText(hs, vg.Point{X: dc.Min.X, Y: ry}, f.Risk.Heading)
		ry -= rowH * 1.3
		for _, r := range f.Risk.Rows {
			ls := textStyle(vg.Points(9), r.Colour)
			ls.YAlign = draw.YCenter
			c.FillText(ls, vg.Point{X: c.Min.X + pad, Y: ry}, r.Label)
			cs := ls
			cs.XAlign = draw.XCenter
			for i, t := range f.Risk.Times {
				if i < len(r.Cells) && r.Cells[i] != "" {
					c.FillText(cs, vg.Point{X: tx(t), Y: ry}, r.Cells[i])
				}
			}
			ry -= rowH
		}
	}
	return lay, nil
}

// wrap breaks s into lines no wider than w.
func wrap(sty draw.TextStyle, s string, w vg.Length) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		try := word
		if line != "" {
			try = line + " " + word
		}
		if line != "" && sty.Width(try) > w {
			out = append(out, line)
			line = word
			continue
		}
		line = try
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

func trimNum(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}
