package stattest

import (
	"math"
	"sort"
)

// KS is the one-sample Kolmogorov–Smirnov distance sup |F_n(x) - cdf(x)|
// of the sample xs (not modified) to cdf.
func KS(xs []float64, cdf func(float64) float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := float64(len(s))
	var d float64
	for i, x := range s {
		f := cdf(x)
		d = math.Max(d, math.Max(f-float64(i)/n, float64(i+1)/n-f))
	}
	return d
}

// KSCritical is the asymptotic critical value of the KS distance of n
// draws at level alpha (the test's false-alarm rate):
// sqrt(-ln(alpha/2)/2) / sqrt(n).
func KSCritical(n int, alpha float64) float64 {
	return math.Sqrt(-math.Log(alpha/2)/2) / math.Sqrt(float64(n))
}
