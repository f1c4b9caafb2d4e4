package regression

import (
	"gonum.org/v1/gonum/mat"
)

// Interval methods of the non-private discrete fit
// (DiscreteResult.IntervalMethod).
const (
	IntervalWald = "wald (non-private): estimate -/+ 1.96 se, se from the inverse observed information " +
		"(the loss Hessian) at the estimate; sampling error only (R: confint.default(glm))"
	IntervalWaldSingular = "none: the observed information at the estimate is singular (a coefficient is not identified)"
	IntervalRidgeNone    = "none: a ridge-penalised fit (--ridge) has no Wald interval"
)

// mleWald fills the non-private fit's standard errors and Wald 95%
// intervals from the observed information (the Hessian of the total loss,
// minus the log-likelihood's) at f.
func mleWald(memo *evalMemo, f []float64, res *DiscreteResult) {
	m := memo.m
	d := m.dim()
	_, h := memo.at(f)
	sym := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			sym.SetSym(i, j, (h[i*d+j]+h[j*d+i])/2)
		}
	}
	var chol mat.Cholesky
	if !chol.Factorize(sym) {
		res.IntervalMethod = IntervalWaldSingular
		return
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		res.IntervalMethod = IntervalWaldSingular
		return
	}
	v := make([]float64, d)
	for j := range v {
		v[j] = inv.At(j, j)
	}
	se, lo, hi, z, p := waldIntervals(f, v, 0.95)
	e := m.e
	res.AlphaSE, res.BetaSE = se[:e], se[e:]
	res.AlphaLower, res.AlphaUpper = lo[:e], hi[:e]
	res.BetaLower, res.BetaUpper = lo[e:], hi[e:]
	res.BetaZ, res.BetaP = z[e:], p[e:]
	res.IntervalMethod = IntervalWald
}
