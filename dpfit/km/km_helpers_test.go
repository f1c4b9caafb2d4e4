package km

import (
	"github.com/dpsurv/dpsurv/internal/datasets"
	"math"
	"sort"
	"strconv"
	"testing"

	"github.com/dpsurv/dpsurv/survival"
)

// kmData is one dataset's records with cohorts mapped to 0..k-1 in the
// sorted order of their labels.
type kmData struct {
	time   []float64
	event  []bool
	cohort []int
	labels []string
}

func loadKMData(t testing.TB, name string) kmData {
	t.Helper()
	tb := datasets.Read(t, name+"_tte.csv")
	col := tb.Columns()
	seen := map[string]bool{}
	var d kmData
	for _, r := range tb.Rows {
		if !seen[r[col["cohort"]]] {
			seen[r[col["cohort"]]] = true
			d.labels = append(d.labels, r[col["cohort"]])
		}
	}
	sort.Strings(d.labels)
	idx := map[string]int{}
	for i, l := range d.labels {
		idx[l] = i
	}
	for _, r := range tb.Rows {
		tm, err := strconv.ParseFloat(r[col["time"]], 64)
		if err != nil {
			t.Fatalf("%s: time %q: %v", name, r[col["time"]], err)
		}
		d.time = append(d.time, tm)
		d.event = append(d.event, r[col["event"]] == "1")
		d.cohort = append(d.cohort, idx[r[col["cohort"]]])
	}
	return d
}

func (d kmData) maxTime() float64 {
	m := 0.0
	for _, x := range d.time {
		m = math.Max(m, x)
	}
	return m
}

func (d kmData) histogram(t testing.TB, binWidth, tMax float64) *Histogram {
	t.Helper()
	h, err := NewHistogram(binWidth, tMax, len(d.labels))
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.time {
		if err := h.Add(d.time[i], d.event[i], d.cohort[i]); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// exact returns the non-private KM of one cohort (-1: all).
func (d kmData) exact(t testing.TB, cohort int) survival.KMCurve {
	t.Helper()
	return d.exactBinned(t, cohort, 0)
}

// exactBinned is the non-private KM of one cohort (-1: all) on times moved
// to the start of their bin of width bw (0: unbinned) — what a histogram
// with that bin width holds without noise.
func (d kmData) exactBinned(t testing.TB, cohort int, bw float64) survival.KMCurve {
	t.Helper()
	var tm []float64
	var ev []bool
	for i := range d.time {
		if cohort < 0 || d.cohort[i] == cohort {
			x := d.time[i]
			if bw > 0 {
				x = math.Floor(x/bw) * bw
			}
			tm = append(tm, x)
			ev = append(ev, d.event[i])
		}
	}
	c, err := survival.KaplanMeier(tm, ev, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// survAt evaluates a step curve at x (1 before the first row).
func survAt(c survival.KMCurve, x float64) float64 {
	i := sort.Search(len(c.Time), func(i int) bool { return c.Time[i] > x })
	if i == 0 {
		return 1
	}
	return c.Surv[i-1]
}

// supError is the largest |S_got - S_want| over got's reported range,
// evaluated at want's and got's jump times.
func supError(got, want survival.KMCurve) float64 {
	if len(got.Time) == 0 {
		return 1
	}
	end := got.Time[len(got.Time)-1]
	m := 0.0
	for _, ts := range [][]float64{got.Time, want.Time} {
		for _, x := range ts {
			if x <= end {
				m = math.Max(m, math.Abs(survAt(got, x)-survAt(want, x)))
			}
		}
	}
	return m
}

func closeTo(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

// sameCurve compares every column and the median of two curves. got's
// median and limits are recomputed by R's rule from its own columns: a
// private release withholds medians its upper limit does not support and
// reports the median's upper limit at the end of its bin
// (km_inference.go, tested in km_inference_test.go), which R does not;
// want's medians are recomputed the same way (it may be a release too).
// A private curve has a row in every bin; rows without events or
// censorings are dropped where the other curve has none.
//
// A private release's interval is the log-log one (km_interval.go), R's
// the log one: where got's limits are not want's, want's are replaced by
// the log-log limits of its own surv and std_err (what a release gives
// when the noise vanishes) and must then match.
func sameCurve(t testing.TB, what string, got, want survival.KMCurve, tol float64) {
	t.Helper()
	if len(got.Time) != len(want.Time) {
		got = dropEmptyRows(got)
	}
	if len(got.Time) != len(want.Time) {
		want = dropEmptyRows(want)
	}
	if len(got.Time) != len(want.Time) {
		t.Fatalf("%s: %d rows, want %d", what, len(got.Time), len(want.Time))
	}
	if !sameSlice(got.Lower, want.Lower, tol) || !sameSlice(got.Upper, want.Upper, tol) {
		want = logLogLimits(want)
	}
	got, want = rMedian(t, got), rMedian(t, want)
	cols := []struct {
		name      string
		got, want []float64
	}{
		{"time", got.Time, want.Time}, {"n_risk", got.NRisk, want.NRisk}, {"n_event", got.NEvent, want.NEvent},
		{"n_censor", got.NCensor, want.NCensor}, {"surv", got.Surv, want.Surv}, {"std_err", got.StdErr, want.StdErr},
		{"lower", got.Lower, want.Lower}, {"upper", got.Upper, want.Upper},
	}
	for _, c := range cols {
		for i := range c.want {
			if !closeTo(c.got[i], c.want[i], tol) {
				t.Fatalf("%s: %s[%d] = %v, want %v", what, c.name, i, c.got[i], c.want[i])
			}
		}
	}
	for _, m := range [][2]float64{{got.Median, want.Median}, {got.MedianLower, want.MedianLower}, {got.MedianUpper, want.MedianUpper}} {
		if !closeTo(m[0], m[1], tol) {
			t.Fatalf("%s: median/CI %v, want %v", what, m[0], m[1])
		}
	}
}

func sameSlice(a, b []float64, tol float64) bool {
	for i := range b {
		if i >= len(a) || !closeTo(a[i], b[i], tol) {
			return false
		}
	}
	return true
}

// logLogLimits returns c with the log-log Greenwood limits of its surv and
// std_err (the std_err of log S): S^exp(+/- z se / |log S|).
func logLogLimits(c survival.KMCurve) survival.KMCurve {
	z := math.Sqrt2 * math.Erfinv(c.Conf)
	c.Lower = append([]float64{}, c.Lower...)
	c.Upper = append([]float64{}, c.Upper...)
	for i, s := range c.Surv {
		c.Lower[i], c.Upper[i] = moverInterval(math.Log(s), c.StdErr[i], 0, 0, z)
		if s == 0 {
			c.Lower[i], c.Upper[i] = math.NaN(), math.NaN()
		}
	}
	return c
}

// rMedian returns c with its median and limits recomputed by R's
// quantile(fit, 0.5) from its own columns.
func rMedian(t testing.TB, c survival.KMCurve) survival.KMCurve {
	t.Helper()
	if len(c.Time) == 0 {
		return c
	}
	q, lo, hi, err := c.Quantile(0.5)
	if err != nil {
		t.Fatal(err)
	}
	c.Median, c.MedianLower, c.MedianUpper = q, lo, hi
	return c
}

// dropEmptyRows removes the rows with no event and no censoring.
func dropEmptyRows(c survival.KMCurve) survival.KMCurve {
	out := c
	out.Time, out.NRisk, out.NEvent, out.NCensor = nil, nil, nil, nil
	out.Surv, out.StdErr, out.Lower, out.Upper = nil, nil, nil, nil
	for i := range c.Time {
		if c.NEvent[i] == 0 && c.NCensor[i] == 0 {
			continue
		}
		out.Time = append(out.Time, c.Time[i])
		out.NRisk = append(out.NRisk, c.NRisk[i])
		out.NEvent = append(out.NEvent, c.NEvent[i])
		out.NCensor = append(out.NCensor, c.NCensor[i])
		out.Surv = append(out.Surv, c.Surv[i])
		out.StdErr = append(out.StdErr, c.StdErr[i])
		out.Lower = append(out.Lower, c.Lower[i])
		out.Upper = append(out.Upper, c.Upper[i])
	}
	return out
}

// curvesOnly is o for a test that reads the released curves only (times,
// S, truncation): no log-rank tests, intervals or medians, which draw no
// noise and leave the curves as they are.
func curvesOnly(o KMOptions) KMOptions {
	o.noLogRank, o.noIntervals = true, true
	return o
}
