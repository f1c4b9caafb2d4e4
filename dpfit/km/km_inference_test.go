package km

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// TestEmptyWindowRelease: a window that received no records is still
// released (on the clock), but every cohort is flagged low_information,
// n >= 0 equals the first at-risk number, and no median is released. 60
// releases per method and epsilon; the flag misses only when the noise of
// the count exceeds LowInformationSDs = 4 of its SDs (Laplace-like tails:
// about 0.2%), so at most 1 cohort-release in 600 may go unflagged, and
// even then no median may be released.
func TestEmptyWindowRelease(t *testing.T) {
	h, err := NewHistogram(DefaultBinWidth(5400), 5400, 10)
	if err != nil {
		t.Fatal(err)
	}
	fits := map[string]func(*Histogram, dp.Source, KMOptions) (KMResult, error){
		"hierarchical": HierarchicalKM, "histogram": NoisyHistogramKM}
	for name, fit := range fits {
		for _, eps := range []float64{0.5, 1, 2} {
			unflagged := 0
			for s := 0; s < 60; s++ {
				res, err := fit(h, dp.NewSeededSource(uint64(900+s)), KMOptions{Epsilon: eps, LogRankSims: -1, IntervalSims: -1})
				if err != nil {
					t.Fatal(err)
				}
				for _, ck := range append(res.Cohorts, res.Overall) {
					if !ck.LowInformation {
						unflagged++
					}
					if ck.N < 0 || (len(ck.Curve.NRisk) > 0 && ck.N != ck.Curve.NRisk[0]) {
						t.Fatalf("%s eps %v seed %d cohort %d: n %v, n_risk %v", name, eps, s, ck.Cohort, ck.N, ck.Curve.NRisk[:1])
					}
					if !math.IsNaN(ck.Curve.Median) || !math.IsNaN(ck.Curve.MedianUpper) {
						t.Fatalf("%s eps %v seed %d cohort %d: median %v [%v, %v] (%q)", name, eps, s, ck.Cohort,
							ck.Curve.Median, ck.Curve.MedianLower, ck.Curve.MedianUpper, ck.MedianNote)
					}
					if ck.LowInformation && ck.MedianNote != MedianNoteLowInfo {
						t.Fatalf("%s: flagged cohort with note %q", name, ck.MedianNote)
					}
				}
				if res.N < 0 {
					t.Fatalf("%s: n %v", name, res.N)
				}
			}
			if unflagged > 1 {
				t.Errorf("%s eps %v: %d of 660 cohort releases of an empty window not flagged", name, eps, unflagged)
			}
		}
	}
}

// TestNoiseAwareIntervalContainsSampling: the released interval contains
// the log-log Greenwood (sampling-only) interval it widens by the noise
// (km_interval.go), std_err^2 = greenwood^2 + noise^2, and
// a median is released only with a finite upper limit at a bin end.
func TestNoiseAwareIntervalContainsSampling(t *testing.T) {
	h, res := flchainRelease(t, 3)
	for _, ck := range res.Cohorts {
		cv := ck.Curve
		for i := range cv.Time {
			g, n := ck.SamplingStdErr[i], ck.NoiseStdErr[i]
			if !closeTo(cv.StdErr[i], math.Sqrt(g*g+n*n), 1e-12) {
				t.Fatalf("cohort %d row %d: std_err %v, greenwood %v, noise %v", ck.Cohort, i, cv.StdErr[i], g, n)
			}
			z := math.Sqrt2 * math.Erfinv(cv.Conf)
			lo, hi := moverInterval(math.Log(cv.Surv[i]), g, 0, 0, z)
			if cv.Surv[i] > 0 && (cv.Lower[i] > lo+1e-12 || cv.Upper[i] < hi-1e-12) {
				t.Fatalf("cohort %d row %d: [%v, %v] does not contain [%v, %v]", ck.Cohort, i, cv.Lower[i], cv.Upper[i], lo, hi)
			}
		}
		if !math.IsNaN(cv.Median) {
			if math.IsNaN(cv.MedianUpper) || math.Mod(cv.MedianUpper, h.BinWidth) > 1e-9*h.BinWidth && h.BinWidth-math.Mod(cv.MedianUpper, h.BinWidth) > 1e-9*h.BinWidth {
				t.Errorf("cohort %d: median %v with upper limit %v (bin width %v)", ck.Cohort, cv.Median, cv.MedianUpper, h.BinWidth)
			}
		} else if ck.MedianNote == "" {
			t.Errorf("cohort %d: null median without a note", ck.Cohort)
		}
	}
}

// flchainRelease is a hierarchical release (epsilon 1, simulated
// intervals, no log-rank) of flchain's cohorts over 5400 days at the
// default bin width, with its histogram.
func flchainRelease(t *testing.T, seed uint64) (*Histogram, KMResult) {
	t.Helper()
	d := loadKMData(t, "flchain")
	h := d.histogram(t, DefaultBinWidth(5400), 5400)
	res, err := HierarchicalKM(h, dp.NewSeededSource(seed), KMOptions{Epsilon: 1, LogRankSims: -1, IntervalSims: 30})
	if err != nil {
		t.Fatal(err)
	}
	return h, res
}

// TestMoverInterval: the interval's two limiting cases — no noise: the
// log-log Greenwood interval S^exp(+/- z g/|log S|); no sampling error:
// S exp(-z sd_down), S exp(z sd_up) — and the MOVER combination in between.
func TestMoverInterval(t *testing.T) {
	z := 1.959963984540054
	s, g := 0.8, 0.05
	l := math.Log(s)
	lo, hi := moverInterval(l, g, 0, 0, z)
	a := math.Exp(z * g / -l)
	if !closeTo(lo, math.Pow(s, a), 1e-12) || !closeTo(hi, math.Pow(s, 1/a), 1e-12) {
		t.Errorf("no noise: [%v, %v], want the log-log [%v, %v]", lo, hi, math.Pow(s, a), math.Pow(s, 1/a))
	}
	lo, hi = moverInterval(l, 0, 0.03, 0.01, z)
	if !closeTo(lo, s*math.Exp(-z*0.03), 1e-12) || !closeTo(hi, s*math.Exp(z*0.01), 1e-12) {
		t.Errorf("no sampling error: [%v, %v]", lo, hi)
	}
	lo, hi = moverInterval(l, g, 0.03, 0.01, z)
	dl, du := l-l*a, l/a-l
	if !closeTo(lo, math.Exp(l-math.Hypot(dl, z*0.03)), 1e-12) || !closeTo(hi, math.Exp(l+math.Hypot(du, z*0.01)), 1e-12) {
		t.Errorf("both: [%v, %v]", lo, hi)
	}
	if _, hi = moverInterval(math.Log(0.999), 0.01, 0.05, 0.05, z); hi != 1 {
		t.Errorf("upper limit %v not capped at 1", hi)
	}
}

// TestSimultaneousBandShape: a simulated release carries a band over a
// range [band_from, band_to] of its released times, null outside it, that
// contains the curve, is at least as wide as S exp(-/+ z std_err) (its
// critical value exceeds z) and ends before the noise-dominated tail; with
// the simulation disabled there is no band and band_method says so.
func TestSimultaneousBandShape(t *testing.T) {
	h, res := flchainRelease(t, 4)
	z := math.Sqrt2 * math.Erfinv(0.95)
	for _, ck := range append(res.Cohorts, res.Overall) {
		if ck.BandMethod != BandMethodSimulated {
			t.Fatalf("cohort %d: no band (%q)", ck.Cohort, ck.BandMethod)
		}
		if !(ck.BandCritical > z) || !(ck.BandFrom < ck.BandTo) {
			t.Fatalf("cohort %d: critical value %v, range [%v, %v]", ck.Cohort, ck.BandCritical, ck.BandFrom, ck.BandTo)
		}
		if !math.IsNaN(ck.NoiseDominatedFrom) && ck.BandTo >= ck.NoiseDominatedFrom {
			t.Fatalf("cohort %d: band to %v, noise-dominated from %v", ck.Cohort, ck.BandTo, ck.NoiseDominatedFrom)
		}
		cv := ck.Curve
		for i, tm := range cv.Time {
			in := tm >= ck.BandFrom && tm <= ck.BandTo
			if !in {
				if !math.IsNaN(ck.BandLower[i]) || !math.IsNaN(ck.BandUpper[i]) {
					t.Fatalf("cohort %d row %d (t = %v): band [%v, %v] outside its range", ck.Cohort, i, tm, ck.BandLower[i], ck.BandUpper[i])
				}
				continue
			}
			s, se := cv.Surv[i], cv.StdErr[i]
			if !(ck.BandLower[i] <= s*math.Exp(-z*se)) || !(ck.BandUpper[i] >= math.Min(1, s*math.Exp(z*se))-1e-12) || ck.BandUpper[i] > 1 {
				t.Fatalf("cohort %d row %d: band [%v, %v] around S %v (se %v)", ck.Cohort, i, ck.BandLower[i], ck.BandUpper[i], s, se)
			}
		}
	}
	res, err := HierarchicalKM(h, dp.NewSeededSource(4), KMOptions{Epsilon: 1, LogRankSims: -1, IntervalSims: -1})
	if err != nil {
		t.Fatal(err)
	}
	if ck := res.Cohorts[0]; ck.BandMethod != BandMethodNone || ck.BandLower != nil || !math.IsNaN(ck.BandCritical) {
		t.Errorf("no simulation: band %q, %d values, critical %v", ck.BandMethod, len(ck.BandLower), ck.BandCritical)
	}
}
