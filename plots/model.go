package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot/vg"
)

// KMCohort is one cohort's curve as released: a right-continuous step
// function, S(t) = 1 before Time[0] and Surv[i] on [Time[i], Time[i+1]).
type KMCohort struct {
	// Label is the public cohort label; Position its place in the public
	// label list, which fixes its colour (CohortColour). Position < 0 is a
	// pooled or unlabelled curve (grey).
	Label    string
	Position int
	Time     []float64
	Surv     []float64
	// Lower and Upper are the pointwise confidence interval at Time (level
	// KMSpec.Conf), drawn shaded; nil for none. NaN entries leave gaps.
	Lower, Upper []float64
	// BandLower and BandUpper are a simultaneous band at Time (level
	// KMSpec.BandConf), NaN outside its range; drawn as thin dotted lines.
	BandLower, BandUpper []float64
	// NRisk and NCensor are the at-risk and censoring counts at Time
	// (released counts for a private curve: noisy); nil for none.
	NRisk, NCensor []float64
	// End is the time up to which the last step is drawn (the last
	// follow-up time); NaN or below the last Time: the last Time.
	End float64
	// NoiseFrom is the first time from which the curve is dominated by
	// privacy noise (km.CohortKM.NoiseDominatedFrom); NaN for none. From
	// there on the curve is drawn lighter, continuing from the last point
	// drawn before it.
	NoiseFrom float64
	// Truncated says the release stops before the end of follow-up: the
	// number-at-risk table is blank past the last released time rather
	// than 0.
	Truncated bool
	// LowInformation marks a cohort whose release is flagged
	// low_information (named in the legend and subtitle).
	LowInformation bool
	// Legend replaces the legend text ("cohort " + Label); Dashed draws
	// the curve dashed whatever its position (a comparison figure's
	// reference curve in its cohort's colour).
	Legend string
	Dashed bool
}

// ParametricCurve is a fitted survival curve (a Weibull fit) overlaid on
// the Kaplan–Meier curves, drawn dashed in its cohort's colour over
// [0, XMax] with its band shaded.
type ParametricCurve struct {
	Label        string
	Position     int
	Time, Surv   []float64
	Lower, Upper []float64 // nil for none
}

// KMSpec is what a Kaplan–Meier figure shows.
type KMSpec struct {
	Title string
	// Subtitle lines: what was released, its guarantee; BuildKM adds a
	// low-information line when any cohort is flagged.
	Subtitle []string
	// TimeUnit names the unit of the time axis ("days"); required.
	TimeUnit string
	// XMax is the right end of the time axis (the public time_max of a
	// private release): used when the curves stop before half of it or
	// reach past it, or always with XMaxFixed; 0 = the largest End/Time.
	XMax      float64
	XMaxFixed bool
	// Conf is the level of the pointwise intervals (0.95); BandConf the
	// level of the simultaneous bands, BandMethod a short name of how they
	// were made ("simulated equal-precision band").
	Conf       float64
	BandConf   float64
	BandMethod string
	// NoisyCounts says the counts (number at risk, censoring marks) are
	// released noisy counts; the risk table's heading says so.
	NoisyCounts bool
	// NoiseNote describes the noise-dominated tail in the legend ("noise SD
	// of S above 0.05").
	NoiseNote  string
	Cohorts    []KMCohort
	Parametric []ParametricCurve
	// ParametricBand describes the parametric curves' band in the legend
	// ("95% pointwise, delta method").
	ParametricName string
	ParametricBand string
	// Notes are extra lines printed under the legend.
	Notes []string
	// NoKM says the figure deliberately shows no Kaplan–Meier curve (a
	// private Weibull fit: the exact KM would publish private data); the
	// reason is in Notes.
	NoKM bool
}

// Pt is a point in data coordinates (time, survival probability).
type Pt struct{ X, Y float64 }

// Role says what a drawn element is.
type Role string

// The roles of drawn elements.
const (
	RoleEstimate    Role = "estimate"      // the released curve, solid part
	RoleNoiseTail   Role = "noise-tail"    // the released curve from NoiseFrom on
	RolePointwise   Role = "pointwise"     // shaded pointwise interval
	RoleSimultLower Role = "simult-lower"  // simultaneous band, lower edge
	RoleSimultUpper Role = "simult-upper"  // simultaneous band, upper edge
	RoleParametric  Role = "parametric"    // fitted parametric curve
	RoleParamBand   Role = "param-band"    // its shaded band
	RoleCensorMarks Role = "censor-marks"  // censoring ticks
	RoleLegendStyle Role = "legend-sample" // a legend's sample only
)

// Line is a polyline in data coordinates: exactly what the renderer
// strokes.
type Line struct {
	Cohort string
	Role   Role
	Points []Pt
	Colour color.NRGBA
	Width  vg.Length
	Dashes []vg.Length
}

// Area is a filled polygon in data coordinates.
type Area struct {
	Cohort  string
	Role    Role
	Polygon []Pt
	Colour  color.NRGBA
}

// Marks are censoring ticks ("+"-like vertical ticks) at data points.
type Marks struct {
	Cohort string
	Points []Pt
	Colour color.NRGBA
}

// LegendEntry is one line of the legend, drawn outside the data area.
type LegendEntry struct {
	Text   string
	Colour color.NRGBA
	// Sample is how the entry's swatch looks: "line", "light-line",
	// "dotted", "dashed", "area", "mark" or "" (text only, a heading).
	Sample string
	Dashes []vg.Length
}

// RiskRow is one cohort's row of the number-at-risk table.
type RiskRow struct {
	Label  string
	Colour color.NRGBA
	Cells  []string // one per RiskTable.Times; "" = not released
}

// RiskTable is the number-at-risk table under the time axis; its columns
// are the time axis's major ticks.
type RiskTable struct {
	Heading string
	Times   []float64
	Rows    []RiskRow
}

// Figure is the drawing model: everything a figure shows, in data
// coordinates, before any pixel. Tests check it; Write renders it.
type Figure struct {
	Title    string
	Subtitle []string
	XLabel   string
	YLabel   string
	XMax     float64
	XTicks   []float64
	Areas    []Area
	Lines    []Line
	Marks    []Marks
	Legend   []LegendEntry
	Notes    []string
	Risk     *RiskTable
}

// Sizes of the rendered figure (both formats): 9 in wide at 200 dpi (a
// PNG 1800 px wide), FigureHeight tall plus the number-at-risk table's
// rows (Figure.Height).
const (
	FigureWidth  = 9 * vg.Inch
	FigureHeight = 5 * vg.Inch
	FigureDPI    = 200
	riskRowH     = 11 // points
)

// Height is the rendered height: FigureHeight plus the risk table.
func (f Figure) Height() vg.Length {
	if f.Risk == nil {
		return FigureHeight
	}
	return FigureHeight + vg.Points(riskRowH)*(vg.Length(len(f.Risk.Rows))+1.6)
}

// BuildKM turns a specification into the drawing model.
func BuildKM(s KMSpec) (Figure, error) {
	if s.TimeUnit == "" {
		return Figure{}, fmt.Errorf("km figure: a time unit is required")
	}
	if len(s.Cohorts) == 0 && len(s.Parametric) == 0 {
		return Figure{}, fmt.Errorf("km figure: no curve to draw")
	}
	conf := s.Conf
	if !(conf > 0 && conf < 1) {
		conf = 0.95
	}
	f := Figure{Title: s.Title, Subtitle: append([]string(nil), s.Subtitle...), XLabel: "time (" + s.TimeUnit + ")",
		YLabel: "survival probability", Notes: append([]string(nil), s.Notes...)}
	xmax := 0.0
	for _, c := range s.Cohorts {
		if err := c.check(); err != nil {
			return Figure{}, err
		}
		xmax = math.Max(xmax, c.end())
	}
	for _, pc := range s.Parametric {
		if len(pc.Time) != len(pc.Surv) || (pc.Lower != nil && len(pc.Lower) != len(pc.Time)) || (pc.Upper != nil && len(pc.Upper) != len(pc.Time)) {
			return Figure{}, fmt.Errorf("km figure: %s: parametric curve lengths differ", pc.Label)
		}
		if len(pc.Time) > 0 {
			xmax = math.Max(xmax, pc.Time[len(pc.Time)-1])
		}
	}
	// XMax is the axis unless the curves reach further; curves that stop
	// before half of it are shown against the whole of it.
	if s.XMax > 0 && (xmax > s.XMax || xmax < s.XMax/2) {
		xmax = math.Max(xmax, s.XMax)
	} else if s.XMax > 0 && s.XMaxFixed {
		xmax = s.XMax
	}
	if !(xmax > 0) {
		xmax = 1
	}
	f.XMax = xmax
	f.XTicks = majorTicks(xmax)

	var lowInfo []string
	anyTail, anyBand, anyPointwise, anyMarks := false, false, false, false
	// Legend, risk table and drawing in label-list order.
	s.Cohorts = append([]KMCohort(nil), s.Cohorts...)
	sort.SliceStable(s.Cohorts, func(i, j int) bool { return s.Cohorts[i].Position < s.Cohorts[j].Position })
	thinned := false
	for _, c := range s.Cohorts {
		col := CohortColour(c.Position)
		dash := CohortDashes(c.Position)
		if c.Dashed {
			dash = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		end := c.end()
		if c.Lower != nil && c.Upper != nil {
			for _, poly := range bandPolygons(c.Time, c.Lower, c.Upper, end) {
				f.Areas = append(f.Areas, Area{Cohort: c.Label, Role: RolePointwise, Polygon: poly, Colour: withAlpha(col, 48)})
				anyPointwise = true
			}
		}
		for _, edge := range []struct {
			v    []float64
			role Role
		}{{c.BandLower, RoleSimultLower}, {c.BandUpper, RoleSimultUpper}} {
			if edge.v == nil {
				continue
			}
			for _, seg := range finiteSteps(c.Time, edge.v, end) {
				f.Lines = append(f.Lines, Line{Cohort: c.Label, Role: edge.role, Points: seg, Colour: withAlpha(col, 200),
					Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}})
				anyBand = true
			}
		}
		solid, tail := SplitAt(StepPoints(c.Time, c.Surv, end), c.NoiseFrom)
		if len(solid) > 1 {
			f.Lines = append(f.Lines, Line{Cohort: c.Label, Role: RoleEstimate, Points: solid, Colour: col, Width: vg.Points(1.6), Dashes: dash})
		}
		if len(tail) > 1 {
			f.Lines = append(f.Lines, Line{Cohort: c.Label, Role: RoleNoiseTail, Points: tail, Colour: lighten(col, 0.6), Width: vg.Points(1.6), Dashes: dash})
			anyTail = true
		}
		m := censorMarks(c)
		if t := thinMarks(m, xmax/250); len(t) < len(m) {
			m, thinned = t, true
		}
		if len(m) > 0 {
			f.Marks = append(f.Marks, Marks{Cohort: c.Label, Points: m, Colour: col})
			anyMarks = true
		}
		name := "cohort " + c.Label
		if c.Position < 0 {
			name = c.Label
		}
		if c.Legend != "" {
			name = c.Legend
		}
		if c.LowInformation {
			name += " (low information)"
			lowInfo = append(lowInfo, c.Label)
		}
		if len(c.Time) == 0 {
			name += ": no curve released"
		}
		f.Legend = append(f.Legend, LegendEntry{Text: name, Colour: col, Sample: "line", Dashes: dash})
	}
	for _, pc := range s.Parametric {
		col := CohortColour(pc.Position)
		if pc.Lower != nil && pc.Upper != nil {
			for _, poly := range curvePolygons(pc.Time, pc.Lower, pc.Upper) {
				f.Areas = append(f.Areas, Area{Cohort: pc.Label, Role: RoleParamBand, Polygon: poly, Colour: withAlpha(col, 40)})
			}
		}
		var pts []Pt
		for i := range pc.Time {
			if !math.IsNaN(pc.Surv[i]) {
				pts = append(pts, Pt{pc.Time[i], pc.Surv[i]})
			}
		}
		f.Lines = append(f.Lines, Line{Cohort: pc.Label, Role: RoleParametric, Points: pts, Colour: col, Width: vg.Points(2.2),
			Dashes: []vg.Length{vg.Points(6), vg.Points(3)}})
		if s.NoKM {
			f.Legend = append(f.Legend, LegendEntry{Text: pc.Label, Colour: col, Sample: "dashed", Dashes: []vg.Length{vg.Points(6), vg.Points(3)}})
		}
	}
	grey := color.NRGBA{0x40, 0x40, 0x40, 0xff}
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'g', 4, 64) + "%" }
	if len(s.Cohorts) > 0 || len(s.Parametric) > 0 {
		f.Legend = append(f.Legend, LegendEntry{Text: "", Sample: ""})
	}
	if anyPointwise {
		txt := pct(conf) + " pointwise CI (shaded)"
		if len(s.Parametric) > 0 {
			txt = pct(conf) + " pointwise CI of Kaplan–Meier (shaded)"
		}
		f.Legend = append(f.Legend, LegendEntry{Text: txt, Colour: grey, Sample: "area"})
	}
	if anyBand {
		bc := s.BandConf
		if !(bc > 0 && bc < 1) {
			bc = conf
		}
		txt := pct(bc) + " simultaneous band (dotted)"
		if s.BandMethod != "" {
			txt += ", " + s.BandMethod
		}
		f.Legend = append(f.Legend, LegendEntry{Text: txt, Colour: grey, Sample: "dotted"})
	}
	if anyTail {
		txt := "lighter: noise-dominated tail"
		if s.NoiseNote != "" {
			txt += " (" + s.NoiseNote + ")"
		}
		f.Legend = append(f.Legend, LegendEntry{Text: txt, Colour: lighten(grey, 0.6), Sample: "light-line"})
	}
	if anyMarks {
		txt := "| censored"
		if s.NoisyCounts {
			txt += " (bins with a noisy count ≥ 1)"
		}
		if thinned {
			txt += ", at most one per 0.4% of the axis"
		}
		f.Legend = append(f.Legend, LegendEntry{Text: txt, Colour: grey, Sample: "mark"})
	}
	if len(s.Parametric) > 0 && !s.NoKM { // with NoKM the curves have their own entries
		name := s.ParametricName
		if name == "" {
			name = "parametric fit"
		}
		f.Legend = append(f.Legend, LegendEntry{Text: name + " (dashed)", Colour: grey, Sample: "dashed", Dashes: []vg.Length{vg.Points(6), vg.Points(3)}})
	}
	if len(s.Parametric) > 0 && s.ParametricBand != "" {
		f.Legend = append(f.Legend, LegendEntry{Text: "shaded: " + s.ParametricBand, Colour: grey, Sample: "area"})
	}
	if len(lowInfo) > 0 {
		word := "cohort "
		if len(lowInfo) > 1 {
			word = "cohorts "
		}
		f.Subtitle = append(f.Subtitle, "LOW INFORMATION (low_information): "+word+joinComma(lowInfo)+" — the noise dominates; read with care")
	}
	if rt := riskTable(s, f.XTicks); rt != nil {
		f.Risk = rt
	}
	return f, nil
}

func joinComma(v []string) string {
	out := ""
	for i, s := range v {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

func (c KMCohort) check() error {
	n := len(c.Time)
	if len(c.Surv) != n {
		return fmt.Errorf("km figure: cohort %s: %d times for %d survival values", c.Label, n, len(c.Surv))
	}
	for _, v := range []struct {
		name string
		x    []float64
	}{{"lower", c.Lower}, {"upper", c.Upper}, {"band_lower", c.BandLower}, {"band_upper", c.BandUpper}, {"n_risk", c.NRisk}, {"n_censor", c.NCensor}} {
		if v.x != nil && len(v.x) != n {
			return fmt.Errorf("km figure: cohort %s: %d %s values for %d times", c.Label, len(v.x), v.name, n)
		}
	}
	for i := 1; i < n; i++ {
		if !(c.Time[i] > c.Time[i-1]) {
			return fmt.Errorf("km figure: cohort %s: times must increase", c.Label)
		}
	}
	return nil
}

func (c KMCohort) end() float64 {
	e := 0.0
	if n := len(c.Time); n > 0 {
		e = c.Time[n-1]
	}
	if c.End > e {
		e = c.End
	}
	return e
}

// StepPoints is the polyline of the step function S = 1 before time[0],
// surv[i] on [time[i], time[i+1]), continued to end: from (0, 1) right
// along each step and down each drop. It stops at the time of the first
// NaN value (a truncated release).
func StepPoints(time, surv []float64, end float64) []Pt {
	start := 0.0
	if len(time) > 0 && time[0] < 0 {
		start = time[0]
	}
	pts := []Pt{{start, 1}}
	prev := 1.0
	last := start
	for i := range time {
		if math.IsNaN(surv[i]) {
			end = time[i] // the release stops here
			break
		}
		pts = append(pts, Pt{time[i], prev})
		if surv[i] != prev {
			pts = append(pts, Pt{time[i], surv[i]})
		}
		prev, last = surv[i], time[i]
	}
	if end > last {
		pts = append(pts, Pt{end, prev})
	}
	return dedupe(pts)
}

func dedupe(pts []Pt) []Pt {
	out := pts[:0:0]
	for _, p := range pts {
		if n := len(out); n > 0 && out[n-1] == p {
			continue
		}
		out = append(out, p)
	}
	return out
}

// SplitAt cuts a step polyline at time t0: head holds the points with x <=
// t0 (ending on the horizontal step that reaches t0), tail starts at that
// same point and continues, so the two parts join without a gap or a
// jump. t0 NaN (no noise-dominated tail) returns the whole polyline as
// head.
func SplitAt(pts []Pt, t0 float64) (head, tail []Pt) {
	if math.IsNaN(t0) || len(pts) == 0 || t0 > pts[len(pts)-1].X {
		return pts, nil
	}
	// The first index at x >= t0; the joining point is the level reached
	// just before t0 (left limit), at x = t0.
	k := sort.Search(len(pts), func(i int) bool { return pts[i].X >= t0 })
	if k == 0 {
		return nil, pts
	}
	join := Pt{t0, pts[k-1].Y}
	head = append(append([]Pt(nil), pts[:k]...), join)
	tail = append([]Pt{join}, pts[k:]...)
	return dedupe(head), dedupe(tail)
}

// finiteSteps returns the step polylines of v over the runs of finite
// values (a simultaneous band is NaN outside its range).
func finiteSteps(time, v []float64, end float64) [][]Pt {
	var out [][]Pt
	var cur []Pt
	for i := range time {
		if math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
			if len(cur) > 0 {
				cur = append(cur, Pt{time[i], cur[len(cur)-1].Y})
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		if len(cur) > 0 && cur[len(cur)-1].Y != v[i] {
			cur = append(cur, Pt{time[i], cur[len(cur)-1].Y})
		}
		cur = append(cur, Pt{time[i], v[i]})
	}
	if len(cur) > 0 {
		if end > cur[len(cur)-1].X {
			cur = append(cur, Pt{end, cur[len(cur)-1].Y})
		}
		out = append(out, cur)
	}
	for i := range out {
		out[i] = dedupe(out[i])
	}
	return out
}

// bandPolygons shades the step band [lower, upper] over runs of finite
// values: each run is a polygon along the upper steps and back along the
// lower steps.
func bandPolygons(time, lower, upper []float64, end float64) [][]Pt {
	var out [][]Pt
	i := 0
	for i < len(time) {
		if !finite(lower[i]) || !finite(upper[i]) {
			i++
			continue
		}
		j := i
		for j < len(time) && finite(lower[j]) && finite(upper[j]) {
			j++
		}
		stop := end
		if j < len(time) {
			stop = time[j]
		}
		up := runSteps(time[i:j], upper[i:j], stop)
		lo := runSteps(time[i:j], lower[i:j], stop)
		poly := append([]Pt(nil), up...)
		for k := len(lo) - 1; k >= 0; k-- {
			poly = append(poly, lo[k])
		}
		out = append(out, poly)
		i = j
	}
	return out
}

func runSteps(time, v []float64, stop float64) []Pt {
	var pts []Pt
	for i := range time {
		if i > 0 {
			pts = append(pts, Pt{time[i], v[i-1]})
		}
		pts = append(pts, Pt{time[i], v[i]})
	}
	if n := len(time); n > 0 && stop > time[n-1] {
		pts = append(pts, Pt{stop, v[n-1]})
	}
	return pts
}

// curvePolygons shades a smooth band (a parametric curve's).
func curvePolygons(time, lower, upper []float64) [][]Pt {
	var out [][]Pt
	var up, lo []Pt
	flush := func() {
		if len(up) > 1 {
			poly := append([]Pt(nil), up...)
			for k := len(lo) - 1; k >= 0; k-- {
				poly = append(poly, lo[k])
			}
			out = append(out, poly)
		}
		up, lo = nil, nil
	}
	for i := range time {
		if !finite(lower[i]) || !finite(upper[i]) {
			flush()
			continue
		}
		up = append(up, Pt{time[i], upper[i]})
		lo = append(lo, Pt{time[i], lower[i]})
	}
	flush()
	return out
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// censorMarks puts a tick on the curve at each time with a censoring
// count of at least one (rounded: a noisy count of 0.4 is no mark).
func censorMarks(c KMCohort) []Pt {
	if c.NCensor == nil {
		return nil
	}
	var out []Pt
	for i, t := range c.Time {
		if math.IsNaN(c.Surv[i]) {
			break
		}
		if math.Round(c.NCensor[i]) >= 1 {
			out = append(out, Pt{t, c.Surv[i]})
		}
	}
	return out
}

// thinMarks keeps a mark only where it is at least gap after the last
// kept one (thousands of censoring times would draw a solid bar).
func thinMarks(m []Pt, gap float64) []Pt {
	var out []Pt
	for _, p := range m {
		if n := len(out); n > 0 && p.X-out[n-1].X < gap {
			continue
		}
		out = append(out, p)
	}
	return out
}

// majorTicks are 5 to 10 round ticks on [0, xmax] (steps of 1, 2, 2.5 or
// 5 times a power of ten): the time axis's labels and the risk table's
// columns.
func majorTicks(xmax float64) []float64 {
	if !(xmax > 0) || math.IsInf(xmax, 0) {
		return []float64{0}
	}
	mag := math.Pow(10, math.Floor(math.Log10(xmax)))
	step := mag
	for _, m := range []float64{0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10} {
		step = m * mag
		if xmax/step <= 10 {
			break
		}
	}
	var out []float64
	for i := 0; ; i++ {
		t := float64(i) * step
		if t > xmax*(1+1e-9) {
			break
		}
		out = append(out, math.Round(t/step*1e6)/1e6*step)
	}
	return out
}

// riskTable is the number at risk at each tick: the at-risk count of the
// first time at or after the tick (for a binned private release, the
// first bin starting there); 0 after the end of follow-up, blank after a
// truncated release's last time.
func riskTable(s KMSpec, ticks []float64) *RiskTable {
	var rows []RiskRow
	for _, c := range s.Cohorts {
		if c.NRisk == nil {
			continue
		}
		row := RiskRow{Label: c.Label, Colour: CohortColour(c.Position)}
		for _, t := range ticks {
			k := sort.SearchFloat64s(c.Time, t)
			switch {
			case k < len(c.Time) && !math.IsNaN(c.NRisk[k]) && !math.IsNaN(c.Surv[k]):
				row.Cells = append(row.Cells, strconv.FormatFloat(math.Max(0, math.Round(c.NRisk[k])), 'f', 0, 64))
			case k >= len(c.Time) && !c.Truncated:
				row.Cells = append(row.Cells, "0")
			default:
				row.Cells = append(row.Cells, "")
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil
	}
	h := "Number at risk"
	if s.NoisyCounts {
		h = "Number at risk (noisy released counts, rounded)"
	}
	return &RiskTable{Heading: h, Times: ticks, Rows: rows}
}
