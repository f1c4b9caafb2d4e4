package regression

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ChiSqTest is a chi-square test: statistic, degrees of freedom, p-value.
type ChiSqTest struct {
	ChiSq float64 `json:"chisq"`
	DF    int     `json:"df"`
	P     float64 `json:"p"`
}

// normalQuantile is the two-sided critical value of a conf-level Wald
// interval (1.959964 at 0.95).
func normalQuantile(conf float64) float64 {
	return distuv.UnitNormal.Quantile(1 - (1-conf)/2)
}

// coxHazardRatios returns exp(beta) and its Wald interval exp(beta -/+ z
// se) at conf, as summary.coxph's conf.int table.
func coxHazardRatios(beta, se []float64, conf float64) (hr, lo, hi []float64, c float64) {
	z := normalQuantile(conf)
	hr = make([]float64, len(beta))
	lo = make([]float64, len(beta))
	hi = make([]float64, len(beta))
	for j, b := range beta {
		hr[j] = math.Exp(b)
		lo[j] = math.Exp(b - z*se[j])
		hi[j] = math.Exp(b + z*se[j])
	}
	return hr, lo, hi, conf
}

// coxLRTest is the likelihood-ratio test of beta = 0 from the log partial
// likelihoods at 0 and at the estimate (loglik[0], loglik[1]).
func coxLRTest(loglik []float64, df int) *ChiSqTest {
	if len(loglik) < 2 || df < 1 {
		return nil
	}
	x := 2 * (loglik[1] - loglik[0])
	return &ChiSqTest{ChiSq: x, DF: df, P: distuv.ChiSquared{K: float64(df)}.Survival(x)}
}

// waldIntervals fills se, the Wald interval est -/+ z se at conf, z and
// the two-sided normal p-value from a covariance matrix's diagonal.
func waldIntervals(est, variance []float64, conf float64) (se, lo, hi, z, p []float64) {
	q := normalQuantile(conf)
	n := len(est)
	se, lo, hi, z, p = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for j, b := range est {
		se[j] = math.Sqrt(variance[j])
		lo[j], hi[j] = b-q*se[j], b+q*se[j]
		z[j] = b / se[j]
		p[j] = math.Erfc(math.Abs(z[j]) / math.Sqrt2)
	}
	return se, lo, hi, z, p
}
