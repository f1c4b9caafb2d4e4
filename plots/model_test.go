package plots_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/plots/plotstest"
)

func nan() float64 { return math.NaN() }

// TestNoPhantomTail: the noise-dominated tail is drawn from where the solid
// curve ends, never from (0, 1). The cases are the two phantoms of issue
// 19: a tail starting in the last bin (flchain: a flat line at S = 1 over
// the whole axis) and one starting mid-curve (lung: a false drop from 1.0
// to the tail's first value), plus a tail from the first time and none.
func TestNoPhantomTail(t *testing.T) {
	tm := []float64{0, 10, 20, 30, 40, 50}
	sv := []float64{0.98, 0.9, 0.8, 0.69, 0.6, 0.55}
	for _, tc := range []struct {
		name      string
		noiseFrom float64
		end       float64
	}{
		{"mid-curve (lung)", 30, 55},
		{"last bin (flchain)", 50, 55},
		{"from the first time", 0, 55},
		{"between released times", 25, 55},
		{"none", nan(), 55},
		{"after the end", 70, 55},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := plots.KMSpec{TimeUnit: "days", Cohorts: []plots.KMCohort{
				{Label: "1", Position: 0, Time: tm, Surv: sv, End: tc.end, NoiseFrom: tc.noiseFrom},
				{Label: "10", Position: 9, Time: tm, Surv: sv, End: tc.end, NoiseFrom: tc.noiseFrom},
			}}
			fig, err := plots.BuildKM(spec)
			if err != nil {
				t.Fatal(err)
			}
			if bad := plotstest.CheckKM(spec, fig); len(bad) > 0 {
				t.Fatalf("misdrawn:\n%s", strings.Join(bad, "\n"))
			}
		})
	}
}

// TestCheckKMCatchesPhantom: the checker fails on the old drawing (a tail
// drawn as its own curve from (0, 1)) and on a tail drawn in the curve's
// own colour.
func TestCheckKMCatchesPhantom(t *testing.T) {
	tm := []float64{0, 10, 20, 30}
	sv := []float64{0.98, 0.9, 0.8, 0.69}
	spec := plots.KMSpec{TimeUnit: "days", Cohorts: []plots.KMCohort{{Label: "1", Time: tm, Surv: sv, End: 40, NoiseFrom: 20}}}
	col := plots.CohortColour(0)
	old := plots.Figure{Lines: []plots.Line{
		{Cohort: "1", Role: plots.RoleEstimate, Colour: col, Points: plots.StepPoints(tm[:2], sv[:2], 10)},
		{Cohort: "1", Role: plots.RoleNoiseTail, Colour: col, Points: plots.StepPoints(tm[2:], sv[2:], 40)}, // from (0, 1)
	}}
	bad := plotstest.CheckKM(spec, old)
	joined := strings.Join(bad, "\n")
	for _, want := range []string{"phantom", "off the released curve", "not lighter", "starts at"} {
		if !strings.Contains(joined, want) {
			t.Errorf("checker missed %q; it said:\n%s", want, joined)
		}
	}
}

func TestStepPointsStopsAtNaN(t *testing.T) {
	pts := plots.StepPoints([]float64{0, 5, 10}, []float64{0.9, nan(), 0.5}, 20)
	for _, p := range pts {
		if math.IsNaN(p.Y) || p.X > 5 {
			t.Fatalf("drawn past a truncation: %v", pts)
		}
	}
}

// TestCohortColours: the colour is a function of the label position only;
// flchain's cohorts 1 and 10 (positions 0 and 9) differ, and no two of ten
// positions share colour and dash pattern; the palette is Okabe–Ito's.
func TestCohortColours(t *testing.T) {
	if plots.CohortColour(0) == plots.CohortColour(9) {
		t.Fatal("cohorts 1 and 10 share a colour")
	}
	seen := map[string]int{}
	for i := 0; i < 21; i++ {
		s := fmt.Sprint(plots.CohortColour(i), plots.CohortDashes(i))
		if j, dup := seen[s]; dup {
			t.Fatalf("positions %d and %d share colour and dashes", j, i)
		}
		seen[s] = i
	}
	okabeIto := map[[3]uint8]bool{{0, 0x72, 0xB2}: true, {0xD5, 0x5E, 0}: true, {0, 0x9E, 0x73}: true, {0xE6, 0x9F, 0}: true,
		{0xCC, 0x79, 0xA7}: true, {0x56, 0xB4, 0xE9}: true, {0, 0, 0}: true, {0xF0, 0xE4, 0x42}: true}
	for _, c := range plots.OkabeIto {
		if !okabeIto[[3]uint8{c.R, c.G, c.B}] {
			t.Errorf("%v is not an Okabe–Ito colour", c)
		}
	}
}

// TestRiskTable: the number at risk at each tick is the count of the first
// time at or after it; 0 past the end of follow-up, blank past a
// truncated release; the heading says when counts are noisy.
func TestRiskTable(t *testing.T) {
	c := plots.KMCohort{Label: "A", Time: []float64{0, 100, 250}, Surv: []float64{1, 0.8, 0.5},
		NRisk: []float64{50, 40.4, 12.6}, NCensor: []float64{0, 1, 0}, End: 260, NoiseFrom: nan()}
	tr := c
	tr.Label, tr.Truncated = "B", true
	for _, noisy := range []bool{false, true} {
		fig, err := plots.BuildKM(plots.KMSpec{TimeUnit: "days", XMax: 300, NoisyCounts: noisy, Cohorts: []plots.KMCohort{c, tr}})
		if err != nil {
			t.Fatal(err)
		}
		if fig.Risk == nil {
			t.Fatal("no risk table")
		}
		if got := strings.Contains(fig.Risk.Heading, "noisy"); got != noisy {
			t.Errorf("heading %q, noisy %v", fig.Risk.Heading, noisy)
		}
		want := map[float64][2]string{0: {"50", "50"}, 50: {"40", "40"}, 100: {"40", "40"}, 200: {"13", "13"}, 300: {"0", ""}}
		for i, tk := range fig.Risk.Times {
			w, ok := want[tk]
			if !ok {
				continue
			}
			if fig.Risk.Rows[0].Cells[i] != w[0] || fig.Risk.Rows[1].Cells[i] != w[1] {
				t.Errorf("t = %g: cells %q %q, want %q", tk, fig.Risk.Rows[0].Cells[i], fig.Risk.Rows[1].Cells[i], w)
			}
		}
		if len(fig.Risk.Times) < 5 {
			t.Errorf("ticks %v: want at least 5 columns", fig.Risk.Times)
		}
	}
}

// TestLegendAndLabels: the time axis names its unit, the legend states the
// intervals' levels, the tail and the censoring marks, and a flagged
// cohort is named in the legend and a subtitle.
func TestLegendAndLabels(t *testing.T) {
	c := plots.KMCohort{Label: "A", Time: []float64{0, 10, 20}, Surv: []float64{0.9, 0.8, 0.7}, Lower: []float64{0.8, 0.7, 0.6},
		Upper: []float64{1, 0.9, 0.8}, BandLower: []float64{0.7, 0.6, nan()}, BandUpper: []float64{1, 0.95, nan()},
		NCensor: []float64{0, 2, 0}, NoiseFrom: 20, LowInformation: true, End: 30}
	fig, err := plots.BuildKM(plots.KMSpec{TimeUnit: "months", Conf: 0.9, BandConf: 0.95, NoisyCounts: true, Cohorts: []plots.KMCohort{c}})
	if err != nil {
		t.Fatal(err)
	}
	if fig.XLabel != "time (months)" {
		t.Errorf("x label %q", fig.XLabel)
	}
	var legend []string
	for _, e := range fig.Legend {
		legend = append(legend, e.Text)
	}
	all := strings.Join(legend, "\n")
	for _, want := range []string{"cohort A (low information)", "90% pointwise", "95% simultaneous", "noise-dominated", "censored"} {
		if !strings.Contains(all, want) {
			t.Errorf("legend lacks %q:\n%s", want, all)
		}
	}
	if !strings.Contains(strings.Join(fig.Subtitle, "\n"), "low_information") {
		t.Errorf("subtitle does not flag low information: %q", fig.Subtitle)
	}
	if _, err := plots.BuildKM(plots.KMSpec{Cohorts: []plots.KMCohort{c}}); err == nil {
		t.Error("a figure without a time unit was accepted")
	}
}

// TestWritePNGAndSVG: the PNG decodes and is at least 1600 px wide; the
// SVG parses; other extensions are refused.
func TestWritePNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	c := plots.KMCohort{Label: "A", Time: []float64{0, 10, 20}, Surv: []float64{0.9, 0.8, 0.7}, NRisk: []float64{10, 8, 6}, NoiseFrom: 10, End: 30}
	fig, err := plots.BuildKM(plots.KMSpec{Title: "t", TimeUnit: "days", Cohorts: []plots.KMCohort{c}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "f.png")
	if err := fig.Write(p); err != nil {
		t.Fatal(err)
	}
	plotstest.CheckPNG(t, p)
	s := filepath.Join(dir, "f.svg")
	if err := fig.Write(s); err != nil {
		t.Fatal(err)
	}
	plotstest.CheckSVG(t, s)
	if err := fig.Write(filepath.Join(dir, "f.pdfx")); err == nil {
		t.Fatal("bad extension accepted")
	}
}

// TestAxisCoversEveryCohort: the time axis reaches the latest curve end,
// whichever cohort has it, and a private figure whose curves stop early is
// drawn against its whole public horizon.
func TestAxisCoversEveryCohort(t *testing.T) {
	short := plots.KMCohort{Label: "1", Time: []float64{0, 10}, Surv: []float64{0.9, 0.8}, End: 20, NoiseFrom: nan()}
	long := plots.KMCohort{Label: "2", Position: 1, Time: []float64{0, 300}, Surv: []float64{0.9, 0.5}, End: 640, NoiseFrom: nan()}
	for _, tc := range []struct {
		xmax, want float64
	}{{0, 640}, {1100, 640}, {2000, 2000}} {
		fig, err := plots.BuildKM(plots.KMSpec{TimeUnit: "days", XMax: tc.xmax, Cohorts: []plots.KMCohort{short, long}})
		if err != nil {
			t.Fatal(err)
		}
		// At 1100 the curves reach past half of it: drawn to their end.
		if fig.XMax != tc.want {
			t.Errorf("XMax %g: axis to %g, want %g", tc.xmax, fig.XMax, tc.want)
		}
	}
}

// TestLayoutLegendOutsideData: the legend column lies right of the data
// area and the number-at-risk table under it (under the time axis), for
// ten cohorts with long legend texts; every part stays on the canvas.
func TestLayoutLegendOutsideData(t *testing.T) {
	var cs []plots.KMCohort
	for i := 0; i < 10; i++ {
		cs = append(cs, plots.KMCohort{Label: fmt.Sprint(i + 1), Position: i, Time: []float64{0, 100, 200}, Surv: []float64{0.9, 0.7, 0.5},
			Lower: []float64{0.8, 0.6, 0.4}, Upper: []float64{1, 0.8, 0.6}, BandLower: []float64{0.7, 0.5, 0.3}, BandUpper: []float64{1, 0.9, 0.7},
			NRisk: []float64{100, 80, 60}, NCensor: []float64{1, 1, 1}, NoiseFrom: 100, End: 300, LowInformation: i == 3})
	}
	fig, err := plots.BuildKM(plots.KMSpec{Title: "ten cohorts", TimeUnit: "days", NoisyCounts: true, BandMethod: "simulated equal-precision",
		NoiseNote: "noise SD of S above 0.05", Cohorts: cs})
	if err != nil {
		t.Fatal(err)
	}
	c := vgimg.NewWith(vgimg.UseWH(plots.FigureWidth, fig.Height()), vgimg.UseDPI(plots.FigureDPI))
	dc := draw.New(c)
	lay, err := fig.Draw(dc)
	if err != nil {
		t.Fatal(err)
	}
	if !(lay.Legend.Min.X >= lay.Data.Max.X) {
		t.Errorf("legend from x = %v overlaps the data area to %v", lay.Legend.Min.X, lay.Data.Max.X)
	}
	if !(lay.Risk.Max.Y <= lay.Data.Min.Y) {
		t.Errorf("risk table top %v above the data area's bottom %v", lay.Risk.Max.Y, lay.Data.Min.Y)
	}
	for name, r := range map[string]vg.Rectangle{"data": lay.Data, "legend": lay.Legend, "risk": lay.Risk} {
		if r.Min.X < dc.Min.X || r.Max.X > dc.Max.X || r.Min.Y < dc.Min.Y || r.Max.Y > dc.Max.Y {
			t.Errorf("%s %v outside the canvas %v", name, r, dc.Rectangle)
		}
	}
	if lay.Legend.Max.Y-lay.Legend.Min.Y < vg.Points(10*9) {
		t.Errorf("legend %v too short for ten cohorts", lay.Legend)
	}
}
