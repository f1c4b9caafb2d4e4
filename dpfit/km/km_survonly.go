package km

import "math"

// survOnlyCurve draws the S column of a curve from its consistent counts,
// row by row, as survival.KaplanMeierFromCounts does (same arithmetic,
// same order, so the same bits), without the rest of a KMCurve (Greenwood
// SE, limits, median): the interval simulations of simulateNoiseSD read S
// alone, and KaplanMeierFromCounts cost about a tenth of a release with
// intervals. It checks each row as KaplanMeierFromCounts does (which the
// post-processing's counts always pass) and records the first that fails.
type survOnlyCurve struct {
	surv []float64
	s    float64 // the running product-limit estimate
	rows int
	bad  int // first row failing the checks; -1: none
}

func newSurvOnlyCurve(rows int) survOnlyCurve {
	return survOnlyCurve{surv: make([]float64, 0, rows), s: 1, bad: -1}
}

// row adds a row of n at risk, d events and c censorings (its time, a
// bin's start, is finite, non-negative and increasing by construction).
func (sc *survOnlyCurve) row(n, d, c float64) {
	if sc.bad < 0 && (!finite(n) || !finite(d) || !finite(c) || d < 0 || c < 0 || d > n) {
		sc.bad = sc.rows
	}
	if d > 0 {
		sc.s *= (n - d) / n // survfitkm.c's order, as in survival's kmCurve
	}
	sc.surv = append(sc.surv, sc.s)
	sc.rows++
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// fmax is math.Max(x, y) for every x and y (+Inf beside a NaN included),
// which the builtin max differs from only there, inlined (math.Max is a
// call): the band's hot loop takes the running maximum with it.
func fmax(x, y float64) float64 {
	if x > math.MaxFloat64 || y > math.MaxFloat64 { // +Inf
		return posInf
	}
	return max(x, y)
}

var posInf = math.Inf(1)
