package regression

import (
	"slices"

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

// evalMemo keeps the model's loss and Hessian (unscaled: m.eval's) at the
// last point an objective evaluated with a Hessian. The minimiser's last
// evaluation is at the point it returns, with the Hessian, so the MLE's
// log-likelihood and Wald limits read it there instead of passing over the
// data twice more: the same computation at the same point, the same bits.
type evalMemo struct {
	m    *discreteModel
	f    []float64
	l    float64
	hess []float64
}

func newEvalMemo(m *discreteModel) *evalMemo { return &evalMemo{m: m} }

// keep records eval's loss and Hessian at f (copies; before any scaling).
func (c *evalMemo) keep(f []float64, loss float64, hess []float64) {
	c.f = append(c.f[:0], f...)
	c.l = loss
	c.hess = append(c.hess[:0], hess...)
}

// loss returns the loss at f (at's).
func (c *evalMemo) loss(f []float64) float64 {
	l, _ := c.at(f)
	return l
}

// at returns the loss and Hessian at f: the kept ones if they are at f,
// else a new evaluation (kept). The Hessian is shared: read it only.
func (c *evalMemo) at(f []float64) (loss float64, hess []float64) {
	if c.hess == nil || !slices.Equal(c.f, f) {
		d := c.m.dim()
		h := make([]float64, d*d)
		c.keep(f, c.m.eval(f, nil, h), h)
	}
	return c.l, c.hess
}
