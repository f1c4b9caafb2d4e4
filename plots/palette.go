package plots

import (
	"image/color"

	"gonum.org/v1/plot/vg"
)

// OkabeIto is the colour-blind-safe palette of Okabe and Ito (2008),
// "Color Universal Design", in the order cohorts take them. Black is kept
// for the eighth cohort; the palette's yellow (#F0E442) is left out: it is
// unreadable as a thin line on white.
var OkabeIto = []color.NRGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
}

// cohortDashes are the line patterns of the palette's successive cycles:
// the first len(OkabeIto) cohorts are solid, the next ones dashed, then
// dot-dashed, so that no two cohorts of one label list share a style.
var cohortDashes = [][]vg.Length{
	nil,
	{vg.Points(7), vg.Points(3)},
	{vg.Points(7), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(1.5), vg.Points(2)},
}

// CohortColour is the colour of the cohort at position pos (0-based) of the
// public label list: a function of the position only, so one label keeps
// its colour in every figure drawn from the same label list (a run's fit
// and plots, the demo's two figures). Positions 0 and 9 (flchain's cohorts
// 1 and 10) differ; positions pos and pos+7 share a colour and differ in
// CohortDashes.
func CohortColour(pos int) color.NRGBA {
	if pos < 0 {
		return color.NRGBA{0x59, 0x59, 0x59, 0xff} // pooled / unlabelled: dark grey
	}
	return OkabeIto[pos%len(OkabeIto)]
}

// CohortDashes is the line pattern of the cohort at position pos (nil:
// solid).
func CohortDashes(pos int) []vg.Length {
	if pos < 0 {
		return nil
	}
	return cohortDashes[(pos/len(OkabeIto))%len(cohortDashes)]
}

// lighten mixes c with white: f = 0 keeps c, f = 1 gives white. The
// noise-dominated tail is its cohort's colour lightened, so it reads as
// the same curve continued.
func lighten(c color.NRGBA, f float64) color.NRGBA {
	m := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f + 0.5) }
	return color.NRGBA{m(c.R), m(c.G), m(c.B), c.A}
}

// withAlpha returns c with opacity a in [0, 255].
func withAlpha(c color.NRGBA, a uint8) color.NRGBA {
	c.A = a
	return c
}
