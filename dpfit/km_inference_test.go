package dpfit

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
	d := loadKMData(t, "flchain")
	h := d.histogram(t, DefaultBinWidth(5400), 5400)
	res, err := HierarchicalKM(h, dp.NewSeededSource(3), KMOptions{Epsilon: 1, LogRankSims: -1, IntervalSims: 30})
	if err != nil {
		t.Fatal(err)
	}
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
