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

// evalMemo keeps the model's loss, gradient and Hessian (unscaled: m.eval's)
// at the last point an objective evaluated with a Hessian. The minimiser's
// last evaluation is at the point it returns, with both, so the gradient
// certificate of a perturbation fit and the MLE's log-likelihood and Wald
// limits read it there instead of passing over the data again: the same
// computation at the same point, the same bits.
type evalMemo struct {
	m          *discreteModel
	f          []float64
	l          float64
	grad, hess []float64 // nil when not kept
}

func newEvalMemo(m *discreteModel) *evalMemo { return &evalMemo{m: m} }

// keep records eval's loss, gradient (nil: not computed) and Hessian at f
// (copies; before any scaling).
func (c *evalMemo) keep(f []float64, loss float64, grad, hess []float64) {
	c.f = append(c.f[:0], f...)
	c.l = loss
	c.grad = appendOrNil(c.grad, grad)
	c.hess = appendOrNil(c.hess, hess)
}

// appendOrNil is append(dst[:0], src...), nil for a nil src.
func appendOrNil(dst, src []float64) []float64 {
	if src == nil {
		return nil
	}
	return append(dst[:0], src...)
}

// holds reports whether the memo is at f with the gradient and Hessian
// asked for.
func (c *evalMemo) holds(f []float64, wantGrad, wantHess bool) bool {
	return c.f != nil && (c.grad != nil || !wantGrad) && (c.hess != nil || !wantHess) && slices.Equal(c.f, f)
}

// fill copies the kept gradient and Hessian into grad and hess (each if
// non-nil) and returns the kept loss.
func (c *evalMemo) fill(grad, hess []float64) float64 {
	copy(grad, c.grad)
	copy(hess, c.hess)
	return c.l
}

// loss returns the loss at f (at's).
func (c *evalMemo) loss(f []float64) float64 {
	l, _ := c.at(f)
	return l
}

// at returns the loss and Hessian at f: the kept ones if they are at f,
// else a new evaluation (kept). The Hessian is shared: read it only.
func (c *evalMemo) at(f []float64) (loss float64, hess []float64) {
	if !c.holds(f, false, true) {
		d := c.m.dim()
		h := make([]float64, d*d)
		c.keep(f, c.m.eval(f, nil, h), nil, h)
	}
	return c.l, c.hess
}
