package regression

import (
	"fmt"
	"math"
)

// SplineBasis returns the natural-cubic-spline baseline design of
// mechanisms.md section 5: row s-1 (s = 1..q) is A_s = (b_1, ..., b_e)
// evaluated at t = s/q, with e knots k_j = (j-1)/(e-1) equally spaced on
// [0, 1], b_1 = 1, b_2 = t and b_{j+2} = d_j(t) - d_{e-1}(t) where
// d_j(t) = (max(t-k_j,0)^3 - max(t-k_e,0)^3) / (k_e - k_j).
func SplineBasis(q, e int) ([][]float64, error) {
	if q < 1 {
		return nil, fmt.Errorf("spline basis: intervals must be >= 1, got %d", q)
	}
	if e < 2 {
		return nil, fmt.Errorf("spline basis: knots must be >= 2, got %d", e)
	}
	knots := make([]float64, e)
	for j := range knots {
		knots[j] = float64(j) / float64(e-1)
	}
	d := func(j int, t float64) float64 { // j is 0-based
		ke := knots[e-1]
		a := math.Max(t-knots[j], 0)
		b := math.Max(t-ke, 0)
		return (a*a*a - b*b*b) / (ke - knots[j])
	}
	out := make([][]float64, q)
	for s := 1; s <= q; s++ {
		t := float64(s) / float64(q)
		row := make([]float64, e)
		row[0] = 1
		row[1] = t
		for j := 0; j < e-2; j++ {
			row[j+2] = d(j, t) - d(e-2, t)
		}
		out[s-1] = row
	}
	return out, nil
}

// intervalOf maps a time, already normalised into [0, 1], to its interval
// s = min(q, max(1, ceil(t q))).
func intervalOf(tNorm float64, q int) int {
	s := int(math.Ceil(tNorm * float64(q)))
	if s < 1 {
		s = 1
	}
	if s > q {
		s = q
	}
	return s
}
