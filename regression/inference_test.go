package regression

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// TestOutputIntervalCoverage: the Ext-Out-Pert coefficient intervals cover
// the ridge minimiser on the data (their stated target) at the nominal
// rate. 500 releases of one synthetic data set (2000 records, 2 covariates,
// 20 intervals) at each epsilon in {0.5, 1, 2}; each release has 5
// coefficients, so 2500 intervals per epsilon: coverage must be within
// 0.95 ± 3 x 0.0044 (binomial SE of 2500; the coordinates are
// independent; false alarm 0.3% per epsilon). The coverage of the true
// beta (sampling error and ridge bias, which the interval leaves out) is
// logged, not asserted.
func TestOutputIntervalCoverage(t *testing.T) {
	src := dp.NewSeededSource(23)
	beta := []float64{1, -1}
	data := synthetic(src, 2000, 2, 20, -2, beta)
	ridge, err := FitDiscrete(data, DiscreteOptions{Method: MethodMLE, Ridge: true, TimeMax: 1, Intervals: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := append(append([]float64(nil), ridge.Alpha...), ridge.Beta...)
	for _, eps := range []float64{0.5, 1, 2} {
		covered, total, betaCovered := 0, 0, 0
		var width float64
		for r := 0; r < 500; r++ {
			res, err := FitDiscrete(data, DiscreteOptions{Method: MethodOutput, Epsilon: eps, TimeMax: 1, Intervals: 20}, src)
			if err != nil {
				t.Fatal(err)
			}
			lo := append(append([]float64(nil), res.AlphaLower...), res.BetaLower...)
			hi := append(append([]float64(nil), res.AlphaUpper...), res.BetaUpper...)
			if len(lo) != len(target) || len(hi) != len(target) || res.IntervalMethod != IntervalNoiseOnly {
				t.Fatalf("intervals %v %v (%q)", lo, hi, res.IntervalMethod)
			}
			for j, v := range target {
				total++
				if lo[j] <= v && v <= hi[j] {
					covered++
				}
			}
			for j, b := range beta {
				if res.BetaLower[j] <= b && b <= res.BetaUpper[j] {
					betaCovered++
				}
			}
			width = hi[0] - lo[0]
		}
		c := float64(covered) / float64(total)
		se := math.Sqrt(0.95 * 0.05 / float64(total))
		t.Logf("epsilon %v: coverage of the ridge minimiser %.3f of %d (width %.3f); of the true beta %.3f (ridge beta %v)",
			eps, c, total, width, float64(betaCovered)/float64(500*len(beta)), ridge.Beta)
		if math.Abs(c-0.95) > 3*se {
			t.Errorf("epsilon %v: coverage %.3f outside 0.95 ± 3 x %.4f", eps, c, se)
		}
	}
}

// Ext-Obj-Pert and pSGLD releases carry no interval, with the reason; the
// fallback's interval is around its data-free draw.
func TestOutputIntervalsNone(t *testing.T) {
	src := dp.NewSeededSource(22)
	data := synthetic(src, 300, 2, 20, -2, []float64{1, -1})
	for _, m := range []Method{MethodObjective, MethodPSGLD} {
		res, err := FitDiscrete(data, DiscreteOptions{Method: m, Epsilon: 2, TimeMax: 1, Intervals: 20, PSGLD: PSGLDOptions{Steps: 50}}, src)
		if err != nil {
			t.Fatal(err)
		}
		if res.Fallback {
			continue
		}
		if res.BetaLower != nil || res.IntervalMethod != IntervalNone {
			t.Errorf("%s: intervals %v (%q)", m, res.BetaLower, res.IntervalMethod)
		}
	}
	if _, _, _, err := OutputIntervals(DiscreteResult{}, 1); err == nil {
		t.Error("conf 1 accepted")
	}
}
