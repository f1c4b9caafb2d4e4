// Package plotstest checks survival figures through their drawing model
// (plots.Figure): the polylines handed to the renderer, not pixels.
package plotstest

import (
	"fmt"
	"math"
	"sort"

	"github.com/dpsurv/dpsurv/plots"
)

const tol = 1e-9

// stepAt returns the released step function's value at x (S(x), right
// limit) and just before x (S(x-)): 1 before the first time.
func stepAt(c plots.KMCohort, x float64) (right, left float64) {
	right, left = 1, 1
	k := sort.Search(len(c.Time), func(i int) bool { return c.Time[i] > x }) // first time > x
	if k > 0 {
		right = c.Surv[k-1]
	}
	j := sort.Search(len(c.Time), func(i int) bool { return c.Time[i] >= x }) // first time >= x
	if j > 0 {
		left = c.Surv[j-1]
	}
	return right, left
}

func lastFinite(c plots.KMCohort) float64 {
	end := 0.0
	for i, s := range c.Surv {
		if math.IsNaN(s) {
			return c.Time[i] // a truncated release stops here
		}
		end = c.Time[i]
	}
	if c.End > end {
		end = c.End
	}
	return end
}

// CheckKM returns every way fig misdraws the Kaplan–Meier cohorts of spec
// (nil when none):
//   - a drawn point of a cohort's curve (solid or noise-dominated part)
//     that is not on the released step function: its y must be S(x) or
//     S(x-), its x within [0, the curve's end];
//   - a noise-dominated part that starts anywhere but where the solid part
//     ends, lies before the cohort's NoiseFrom, or has a point above the
//     last released S before NoiseFrom (the phantom segment: a tail drawn
//     from (0, 1));
//   - a solid part that reaches past NoiseFrom;
//   - a curve drawn in a colour other than its label position's, or a
//     tail in the same colour as the solid part (it must be lighter).
func CheckKM(spec plots.KMSpec, fig plots.Figure) []string {
	var bad []string
	for _, c := range spec.Cohorts {
		var solid, tail []plots.Line
		for _, l := range fig.Lines {
			if l.Cohort != c.Label {
				continue
			}
			switch l.Role {
			case plots.RoleEstimate:
				solid = append(solid, l)
			case plots.RoleNoiseTail:
				tail = append(tail, l)
			}
		}
		end := lastFinite(c)
		for _, l := range append(append([]plots.Line(nil), solid...), tail...) {
			prev := math.Inf(-1)
			for _, p := range l.Points {
				if p.X < prev-tol {
					bad = append(bad, fmt.Sprintf("cohort %s %s: x goes back from %g to %g", c.Label, l.Role, prev, p.X))
				}
				prev = p.X
				if p.X < -tol || p.X > end+tol {
					bad = append(bad, fmt.Sprintf("cohort %s %s: point (%g, %g) outside [0, %g]", c.Label, l.Role, p.X, p.Y, end))
				}
				r, lft := stepAt(c, p.X)
				if math.Abs(p.Y-r) > tol && math.Abs(p.Y-lft) > tol {
					bad = append(bad, fmt.Sprintf("cohort %s %s: point (%g, %g) is off the released curve (S = %g, S- = %g)", c.Label, l.Role, p.X, p.Y, r, lft))
				}
			}
		}
		want := plots.CohortColour(c.Position)
		for _, l := range solid {
			if l.Colour != want {
				bad = append(bad, fmt.Sprintf("cohort %s: colour %v, want %v (position %d)", c.Label, l.Colour, want, c.Position))
			}
		}
		hasTail := !math.IsNaN(c.NoiseFrom) && c.NoiseFrom <= end
		if !hasTail {
			if len(tail) > 0 {
				bad = append(bad, fmt.Sprintf("cohort %s: a noise-dominated part drawn without a noise-dominated time", c.Label))
			}
			if len(solid) != 1 {
				bad = append(bad, fmt.Sprintf("cohort %s: %d solid parts, want 1", c.Label, len(solid)))
			}
			continue
		}
		if len(tail) != 1 {
			bad = append(bad, fmt.Sprintf("cohort %s: %d noise-dominated parts, want 1 (from %g)", c.Label, len(tail), c.NoiseFrom))
			continue
		}
		_, sBefore := stepAt(c, c.NoiseFrom)
		tp := tail[0].Points
		for _, p := range tp {
			if p.X < c.NoiseFrom-tol {
				bad = append(bad, fmt.Sprintf("cohort %s: noise-dominated point (%g, %g) before its time %g", c.Label, p.X, p.Y, c.NoiseFrom))
			}
			if p.Y > sBefore+tol {
				bad = append(bad, fmt.Sprintf("cohort %s: noise-dominated point (%g, %g) above the last released S before %g (%g): a phantom segment",
					c.Label, p.X, p.Y, c.NoiseFrom, sBefore))
			}
		}
		if tail[0].Colour == want {
			bad = append(bad, fmt.Sprintf("cohort %s: noise-dominated part not lighter than the curve", c.Label))
		}
		if len(solid) == 1 {
			sp := solid[0].Points
			if sp[len(sp)-1] != tp[0] {
				bad = append(bad, fmt.Sprintf("cohort %s: noise-dominated part starts at %v, the curve ends at %v", c.Label, tp[0], sp[len(sp)-1]))
			}
			for _, p := range sp {
				if p.X > c.NoiseFrom+tol {
					bad = append(bad, fmt.Sprintf("cohort %s: solid point (%g, %g) past the noise-dominated time %g", c.Label, p.X, p.Y, c.NoiseFrom))
				}
			}
		} else if len(solid) > 1 || (len(c.Time) > 0 && c.NoiseFrom > c.Time[0]) {
			bad = append(bad, fmt.Sprintf("cohort %s: %d solid parts before a noise-dominated time %g", c.Label, len(solid), c.NoiseFrom))
		}
	}
	return bad
}
