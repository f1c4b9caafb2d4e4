package regression

import (
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func TestExploreIntervals(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("XN"))
	phi, _ := strconv.ParseFloat(os.Getenv("XPHI"), 64)
	reps, _ := strconv.Atoi(os.Getenv("XREPS"))
	method := Method(os.Getenv("XM"))
	if n == 0 {
		t.Skip()
	}
	src := dp.NewSeededSource(23)
	beta := []float64{1, -1}
	truth := []float64{-2, 0, 0, 1, -1}
	for _, eps := range []float64{0.5, 1, 2} {
		cov := make([]int, 5)
		covN := make([]int, 5)
		wid := make([]float64, 5)
		var errs [5][]float64
		for r := 0; r < reps; r++ {
			data := synthetic(src, n, 2, 20, -2, beta)
			res, err := FitDiscrete(data, DiscreteOptions{Method: method, Epsilon: eps, TimeMax: 1, Intervals: 20, IntervalFraction: phi, PSGLD: PSGLDOptions{Steps: 2000}}, src)
			if err != nil {
				t.Fatal(err)
			}
			lo := append(append([]float64(nil), res.AlphaLower...), res.BetaLower...)
			hi := append(append([]float64(nil), res.AlphaUpper...), res.BetaUpper...)
			nlo := append(append([]float64(nil), res.NoiseOnlyAlphaLower...), res.NoiseOnlyBetaLower...)
			nhi := append(append([]float64(nil), res.NoiseOnlyAlphaUpper...), res.NoiseOnlyBetaUpper...)
			if len(lo) != 5 {
				t.Fatalf("%q", res.IntervalMethod)
			}
			bs, err := newBootstrap(res)
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range truth {
				errs[j] = append(errs[j], bs.est[j]-v)
				if lo[j] <= v && v <= hi[j] {
					cov[j]++
				}
				if len(nlo) == 5 && nlo[j] <= v && v <= nhi[j] {
					covN[j]++
				}
				wid[j] += (hi[j] - lo[j]) / float64(reps)
			}
		}
		for j := range errs {
			var m, ss float64
			for _, e := range errs[j] {
				m += e / float64(reps)
			}
			for _, e := range errs[j] {
				ss += (e - m) * (e - m) / float64(reps-1)
			}
			t.Logf("coef %d: bias %.4f sd %.4f; width/3.92 %.4f", j, m, math.Sqrt(ss), wid[j]/3.92)
		}
		t.Logf("n %d phi %v eps %v: coverage %v (noise-only %v) of %d; mean widths %.3f", n, phi, eps, cov, covN, reps, wid)
	}
	_ = math.Abs
}
