package survival

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/schemas"
)

// KMCurve is a Kaplan–Meier curve with the columns of R's
// survfit(Surv(time, event) ~ 1, conf.type = "log"), one row per distinct
// time (event or censoring).
//
//   - Surv is the product-limit estimate S(t) = prod over t_i <= t of
//     (n_i - d_i)/n_i.
//   - StdErr has R's meaning, which is NOT the standard error of S: it is
//     the standard error of the cumulative hazard -log S(t), Greenwood's
//     sqrt(sum d_i / (n_i (n_i - d_i))). The standard error of S itself is
//     Surv*StdErr. Once every subject at risk dies (n_i == d_i) it is +Inf.
//   - Lower and Upper are the log-transformed interval
//     S exp(-/+ z StdErr), the upper limit capped at 1, with
//     z = qnorm(1 - (1-conf)/2); NaN (R's NA) where S = 0.
//   - Median, MedianLower and MedianUpper are R's quantile(fit, 0.5): the
//     first time S (respectively the Lower and Upper curves) is at or below
//     0.5; where the curve sits exactly on 0.5 over a flat segment, the
//     midpoint of that segment (to the end of follow-up if the curve ends
//     there); NaN when the curve never reaches 0.5. The lower limit of the
//     median comes from the Lower curve, the upper limit from the Upper
//     curve. See SummaryMedian for the variant print(fit) shows.
//
// NaN stands for R's NA; the JSON wire form (Wire, schemas.KMCurve) writes
// it as null.
type KMCurve struct {
	Time    []float64
	NRisk   []float64
	NEvent  []float64
	NCensor []float64
	Surv    []float64
	StdErr  []float64
	Lower   []float64
	Upper   []float64

	Median      float64
	MedianLower float64
	MedianUpper float64

	// Conf is the confidence level of Lower/Upper (0.95 by default).
	Conf float64
}

// Wire is the curve's JSON wire form (schemas.KMCurve; Conf is not part of
// it): NaN values encode as null.
func (c KMCurve) Wire() schemas.KMCurve {
	f := schemas.NullableFloats
	return schemas.KMCurve{
		Time: f(c.Time), NRisk: f(c.NRisk), NEvent: f(c.NEvent), NCensor: f(c.NCensor),
		Surv: f(c.Surv), StdErr: f(c.StdErr), Lower: f(c.Lower), Upper: f(c.Upper),
		Median:      schemas.NullableFloat(c.Median),
		MedianLower: schemas.NullableFloat(c.MedianLower),
		MedianUpper: schemas.NullableFloat(c.MedianUpper),
	}
}

// KaplanMeier computes the Kaplan–Meier curve of right-censored data:
// time[i] >= 0 is the follow-up time, event[i] true for an event (R's
// status 1), false for a censoring. conf is the confidence level of the
// log-transformed interval, in (0, 1) (R's conf.int, usually 0.95).
//
// It agrees with survfit(Surv(time, event) ~ 1, conf.type = "log") and
// quantile(fit, 0.5). Integer times take a counting (histogram) path, other
// times a radix sort; both are linear in the number of records.
func KaplanMeier(time []float64, event []bool, conf float64) (KMCurve, error) {
	if len(time) != len(event) {
		return KMCurve{}, fmt.Errorf("kaplan-meier: %d times but %d event flags", len(time), len(event))
	}
	if len(time) == 0 {
		return KMCurve{}, fmt.Errorf("kaplan-meier: no records")
	}
	if _, err := kmZ(conf); err != nil {
		return KMCurve{}, fmt.Errorf("kaplan-meier: %w", err)
	}
	tab, err := kmTabulate(time, event, nil, 1)
	if err != nil {
		return KMCurve{}, fmt.Errorf("kaplan-meier: %w", err)
	}
	nRisk, nEvent, nCensor := tab.atRisk(0)
	return kmCurve(tab.times, nRisk, nEvent, nCensor, conf)
}

// KaplanMeierFromCounts computes the Kaplan–Meier curve from per-time counts:
// at each time[i] (strictly increasing, >= 0) nRisk[i] subjects at risk,
// nEvent[i] events and nCensor[i] censorings. Counts may be non-integer
// (case weights, debiased or noisy-and-post-processed counts from dpfit) but
// must be finite with 0 <= nEvent[i] <= nRisk[i] and nCensor[i] >= 0. The at
// risk counts are taken as given (they need not equal the previous row minus
// its events and censorings). Rows with nEvent == 0 leave S unchanged.
// With integer counts and consistent at-risk numbers the result equals
// KaplanMeier on the records; with fractional counts it equals R's
// survfit(..., weights = w, robust = FALSE).
func KaplanMeierFromCounts(time, nRisk, nEvent, nCensor []float64, conf float64) (KMCurve, error) {
	n := len(time)
	if len(nRisk) != n || len(nEvent) != n || len(nCensor) != n {
		return KMCurve{}, fmt.Errorf("kaplan-meier from counts: length mismatch (time %d, n_risk %d, n_event %d, n_censor %d)",
			n, len(nRisk), len(nEvent), len(nCensor))
	}
	if n == 0 {
		return KMCurve{}, fmt.Errorf("kaplan-meier from counts: no rows")
	}
	if _, err := kmZ(conf); err != nil {
		return KMCurve{}, fmt.Errorf("kaplan-meier from counts: %w", err)
	}
	for i := 0; i < n; i++ {
		t, r, d, c := time[i], nRisk[i], nEvent[i], nCensor[i]
		if !kmFinite(t) || !kmFinite(r) || !kmFinite(d) || !kmFinite(c) {
			return KMCurve{}, fmt.Errorf("kaplan-meier from counts: row %d: non-finite value", i)
		}
		if t < 0 {
			return KMCurve{}, fmt.Errorf("kaplan-meier from counts: row %d: negative time %v", i, t)
		}
		if i > 0 && !(t > time[i-1]) {
			return KMCurve{}, fmt.Errorf("kaplan-meier from counts: row %d: times must be strictly increasing", i)
		}
		if d < 0 || c < 0 || d > r {
			return KMCurve{}, fmt.Errorf("kaplan-meier from counts: row %d: need 0 <= n_event <= n_risk and n_censor >= 0 (n_risk %v, n_event %v, n_censor %v)", i, r, d, c)
		}
	}
	return kmCurve(append([]float64(nil), time...), append([]float64(nil), nRisk...),
		append([]float64(nil), nEvent...), append([]float64(nil), nCensor...), conf)
}

func kmFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// kmZ returns qnorm(1 - (1-conf)/2).
func kmZ(conf float64) (float64, error) {
	if !(conf > 0 && conf < 1) {
		return 0, fmt.Errorf("confidence level must be in (0, 1), got %v", conf)
	}
	return math.Sqrt2 * math.Erfinv(conf), nil
}

// kmCurve fills surv, std.err, the CI and the median from validated counts;
// it takes ownership of the slices.
func kmCurve(time, nRisk, nEvent, nCensor []float64, conf float64) (KMCurve, error) {
	z, err := kmZ(conf)
	if err != nil {
		return KMCurve{}, err
	}
	n := len(time)
	c := KMCurve{
		Time: time, NRisk: nRisk, NEvent: nEvent, NCensor: nCensor,
		Surv: make([]float64, n), StdErr: make([]float64, n),
		Lower: make([]float64, n), Upper: make([]float64, n),
		Conf: conf,
	}
	km, v := 1.0, 0.0
	for i := 0; i < n; i++ {
		d := nEvent[i]
		if d > 0 {
			r := nRisk[i]
			// Same operation order as survfitkm.c: (n-d)/n and
			// d/(n (n-d)) (+Inf when n == d).
			km *= (r - d) / r
			v += d / (r * (r - d))
		}
		c.Surv[i] = km
		if d <= 0 && i > 0 {
			// No event: the curve and its interval are unchanged.
			c.StdErr[i], c.Lower[i], c.Upper[i] = c.StdErr[i-1], c.Lower[i-1], c.Upper[i-1]
			continue
		}
		se := math.Sqrt(v)
		c.StdErr[i] = se
		if km == 0 {
			c.Lower[i], c.Upper[i] = math.NaN(), math.NaN()
			continue
		}
		// exp(log S -/+ z se) = S / e, S * e with e = exp(z se).
		e := math.Exp(z * se)
		c.Lower[i] = km / e
		c.Upper[i] = math.Min(km*e, 1)
	}
	c.Median = kmFindQuantile(c.Time, c.Surv, 0.5)
	c.MedianLower = kmFindQuantile(c.Time, c.Lower, 0.5)
	c.MedianUpper = kmFindQuantile(c.Time, c.Upper, 0.5)
	return c, nil
}

// kmTol is R's sqrt(.Machine$double.eps), the tolerance quantile.survfit and
// survmean use to decide that a curve sits on a probability level.
var kmTol = math.Sqrt(0x1p-52)

// Quantile returns the time at which the curve reaches 1 - p (p in [0, 1]),
// with its confidence limits from the Lower and Upper curves, exactly as R's
// quantile(fit, p): NaN where a curve never reaches the level. It is the
// generalisation of Median.
func (c KMCurve) Quantile(p float64) (q, lower, upper float64, err error) {
	if !(p >= 0 && p <= 1) {
		return 0, 0, 0, fmt.Errorf("kaplan-meier quantile: probability must be in [0, 1], got %v", p)
	}
	if len(c.Time) == 0 || len(c.Surv) != len(c.Time) || len(c.Lower) != len(c.Time) || len(c.Upper) != len(c.Time) {
		return 0, 0, 0, fmt.Errorf("kaplan-meier quantile: malformed curve")
	}
	return kmFindQuantile(c.Time, c.Surv, p), kmFindQuantile(c.Time, c.Lower, p), kmFindQuantile(c.Time, c.Upper, p), nil
}

// kmFindQuantile ports survival:::findq with firstx = 0 (survfit's default
// start): x = (0, time...), y = (0, 1 - surv...), NaN surv is NA.
func kmFindQuantile(time, surv []float64, p float64) float64 {
	if q, ok := kmFindQuantileMonotone(time, surv, p); ok {
		return q
	}
	n0 := len(time) + 1
	x := make([]float64, 0, n0)
	y := make([]float64, 0, n0)
	x = append(x, 0)
	y = append(y, 0)
	for i := range time {
		x = append(x, time[i])
		y = append(y, 1-surv[i]) // NaN stays NaN
	}
	// if (max(y, na.rm = TRUE) < min(p)) return NA
	maxY := math.Inf(-1)
	for _, v := range y {
		if !math.IsNaN(v) && v > maxY {
			maxY = v
		}
	}
	if maxY < p {
		return math.NaN()
	}
	xmax := x[len(x)-1]
	// drop duplicated y values (first occurrence kept; NA equals NA); order
	// lists the kept points by increasing y (NA last, dropped by approx).
	keep, order := kmFirstOccurrences(y)
	xs := make([]float64, len(keep))
	ys := make([]float64, len(keep))
	for k, i := range keep {
		xs[k], ys[k] = x[i], y[i]
	}
	n := len(ys)
	idx1 := kmApproxConstRight(ys, order, kmTol, p)
	idx2 := kmApproxConstRight(ys, order, -kmTol, p)
	var quant float64
	if idx1 < 0 || idx2 < 0 {
		quant = math.NaN()
	} else {
		quant = (xs[idx1] + xs[idx2]) / 2
	}
	if p == 0 {
		quant = xs[0]
	}
	if last := ys[n-1]; !math.IsNaN(last) && math.Abs(p-last) < kmTol {
		if idx1 < 0 {
			quant = math.NaN()
		} else {
			quant = (xs[idx1] + xmax) / 2
		}
	}
	return quant
}

// kmFindQuantileMonotone is kmFindQuantile without allocation for curves
// whose y = 1 - surv is non-decreasing with NA only at the end (S and its
// lower limit): then the first occurrences of the distinct values are the
// starts of runs, already in order, and approx's "smallest abscissa >= p" is
// the first index reaching p. ok is false for other curves.
func kmFindQuantileMonotone(time, surv []float64, p float64) (q float64, ok bool) {
	n := len(time)
	y := func(i int) float64 { // index into (0, 1 - surv...)
		if i == 0 {
			return 0
		}
		return 1 - surv[i-1]
	}
	x := func(i int) float64 {
		if i == 0 {
			return 0
		}
		return time[i-1]
	}
	nanFrom := n + 1
	for i := 1; i <= n; i++ {
		v := y(i)
		if math.IsNaN(v) {
			if nanFrom > n {
				nanFrom = i
			}
			continue
		}
		if i > nanFrom || v < y(i-1) {
			return 0, false
		}
	}
	last := nanFrom - 1 // last non-NA position; y(0) = 0 is never NA
	maxY := y(last)
	if maxY < p {
		return math.NaN(), true
	}
	first := func(shift float64) int { // approx(y + shift, ..., p), f = 1
		if p < y(0)+shift || p > maxY+shift {
			return -1
		}
		for i := 0; i <= last; i++ {
			if y(i)+shift >= p {
				return i
			}
		}
		return -1
	}
	i1, i2 := first(kmTol), first(-kmTol)
	q = math.NaN()
	if i1 >= 0 && i2 >= 0 {
		// run starts: the first occurrence of y(i1) is i1 itself
		q = (x(i1) + x(i2)) / 2
	}
	if p == 0 {
		q = 0
	}
	if nanFrom > n && math.Abs(p-maxY) < kmTol { // the last distinct value is not NA
		q = math.NaN()
		if i1 >= 0 {
			q = (x(i1) + x(n)) / 2
		}
	}
	return q, true
}

// kmFirstOccurrences returns the positions of the first occurrence of each
// distinct value of y (NaN counting as one value), in increasing position,
// and order: positions into that list sorted by value, NaN last. y holds
// values in [0, 1] or NaN. A curve that is non-decreasing with NaN only at
// its end (1 - S, 1 - Lower) takes a linear path; otherwise a radix sort.
func kmFirstOccurrences(y []float64) (keep, order []int) {
	monotone := true
	nanFrom := len(y)
	for i, v := range y {
		if math.IsNaN(v) {
			if nanFrom == len(y) {
				nanFrom = i
			}
			continue
		}
		if i > nanFrom || (i > 0 && v < y[i-1]) {
			monotone = false
			break
		}
	}
	if monotone {
		for i := 0; i < nanFrom; i++ {
			if i == 0 || y[i] != y[i-1] {
				keep = append(keep, i)
			}
		}
		if nanFrom < len(y) {
			keep = append(keep, nanFrom)
		}
		order = make([]int, len(keep))
		for k := range order {
			order[k] = k
		}
		return keep, order
	}
	keys := make([]uint64, len(y))
	for i, v := range y {
		switch {
		case math.IsNaN(v):
			keys[i] = math.MaxUint64
		case v == 0:
			keys[i] = 0 // -0 == +0
		default:
			keys[i] = math.Float64bits(v) ^ (uint64(int64(math.Float64bits(v))>>63) | 1<<63)
		}
	}
	sorted := kmRadixOrder(keys) // stable: the first of each run is the first occurrence
	first := make([]bool, len(y))
	for r, i := range sorted {
		if r == 0 || keys[i] != keys[sorted[r-1]] {
			first[i] = true
		}
	}
	pos := make([]int, len(y))
	for i := range y {
		if first[i] {
			pos[i] = len(keep)
			keep = append(keep, i)
		}
	}
	order = make([]int, 0, len(keep))
	for _, i := range sorted {
		if first[i] {
			order = append(order, pos[i])
		}
	}
	return keep, order
}

// kmApproxConstRight is approx(y + shift, seq_along(y), v, method =
// "constant", f = 1)$y - 1 (a 0-based index, -1 for NA), with order listing
// y's positions by increasing value (y has no duplicates). Pairs with NA
// abscissa are dropped; v below the smallest or above the largest abscissa
// is NA; otherwise R's approx1 returns the point v equals, else the right
// end of v's interval: the smallest abscissa >= v.
func kmApproxConstRight(y []float64, order []int, shift, v float64) int {
	m := len(order)
	for m > 0 && math.IsNaN(y[order[m-1]]) {
		m--
	}
	if m == 0 {
		return -1
	}
	at := func(k int) float64 { return y[order[k]] + shift }
	if v < at(0) || v > at(m-1) {
		return -1
	}
	// R approx1: bisection, then exact matches, else the right value (f = 1).
	i, j := 0, m-1
	for i < j-1 {
		ij := (i + j) / 2
		if v < at(ij) {
			j = ij
		} else {
			i = ij
		}
	}
	if v == at(j) {
		return order[j]
	}
	if v == at(i) {
		return order[i]
	}
	return order[j]
}

// SummaryMedian returns the median and its confidence limits as
// print(fit) and summary(fit)$table show them (survival:::survmean): the
// first time the curve is at or below 0.5 (+ tolerance); if it sits on 0.5
// there and drops later, the midpoint between that time and the time of the
// next drop. It differs from Median (quantile(fit, 0.5)) only when a curve
// ends exactly on 0.5: Median then averages with the last follow-up time,
// SummaryMedian reports the time the curve reached 0.5.
func (c KMCurve) SummaryMedian() (median, lower, upper float64) {
	return kmMinMin(c.Surv, c.Time), kmMinMin(c.Lower, c.Time), kmMinMin(c.Upper, c.Time)
}

func kmMinMin(y, x []float64) float64 {
	first := -1
	for i, v := range y {
		if !math.IsNaN(v) && v < 0.5+kmTol {
			first = i
			break
		}
	}
	if first < 0 {
		return math.NaN()
	}
	y0 := y[first]
	if math.Abs(y0-0.5) < kmTol {
		for i := first + 1; i < len(y); i++ {
			if !math.IsNaN(y[i]) && y[i] < 0.5+kmTol && y[i] < y0 {
				return (x[first] + x[i]) / 2
			}
		}
	}
	return x[first]
}
