package stattest

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// PooledChiSquare is Pearson's chi-square statistic of the observed counts
// obs against the expected counts exp (same length, exp summing to the
// observations' total), with every cell whose expectation is below 5
// pooled into one cell, and its degrees of freedom: the cells summed (the
// pooled one counted when its expectation is positive) less one. A pooled
// cell of expectation 0 that holds observations (a draw the distribution
// cannot give) makes the statistic +Inf.
func PooledChiSquare(obs, exp []float64) (stat float64, df int) {
	var pooledObs, pooledExp float64
	df = -1
	for i, e := range exp {
		if e < 5 {
			pooledObs += obs[i]
			pooledExp += e
			continue
		}
		stat += (obs[i] - e) * (obs[i] - e) / e
		df++
	}
	switch {
	case pooledExp > 0:
		stat += (pooledObs - pooledExp) * (pooledObs - pooledExp) / pooledExp
		df++
	case pooledObs > 0:
		stat = math.Inf(1)
	}
	return stat, df
}

// ChiSquareCritical is the critical value of a chi-square statistic on df
// degrees of freedom at level alpha (the test's false-alarm rate): the
// 1 - alpha quantile of the chi-square distribution.
func ChiSquareCritical(df int, alpha float64) float64 {
	return distuv.ChiSquared{K: float64(df)}.Quantile(1 - alpha)
}
