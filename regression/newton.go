package regression

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// objective is scale * (sum_i l(f; d_i) + <lin, f>) + (reg/2) ||f||^2, the
// common form of the MLE (reg = 0, lin = nil), Ext-Out-Pert's J and
// Ext-Obj-Pert's perturbed J (scale = 1/n).
type objective struct {
	m     *discreteModel
	scale float64
	reg   float64
	lin   []float64
	memo  *evalMemo // if set, keeps each evaluation with a Hessian and answers a repeat at its point
}

func (o objective) value(f, grad, hess []float64) float64 {
	dim := len(f)
	var loss float64
	switch {
	case o.memo != nil && o.memo.holds(f, grad != nil, hess != nil):
		loss = o.memo.fill(grad, hess)
	case o.memo != nil && hess != nil:
		loss = o.m.eval(f, grad, hess)
		o.memo.keep(f, loss, grad, hess)
	default:
		loss = o.m.eval(f, grad, hess)
	}
	v := o.scale * loss
	var ff float64
	for j, x := range f {
		ff += x * x
		if j < len(o.lin) {
			v += o.scale * o.lin[j] * x
		}
	}
	v += 0.5 * o.reg * ff
	for j := range grad {
		grad[j] = o.scale*grad[j] + o.reg*f[j]
		if o.lin != nil {
			grad[j] += o.scale * o.lin[j]
		}
	}
	if hess != nil {
		for j := range hess {
			hess[j] *= o.scale
		}
		for j := 0; j < dim; j++ {
			hess[j*dim+j] += o.reg
		}
	}
	return v
}

// newtonOptions controls the Newton–Raphson minimiser.
type newtonOptions struct {
	maxIter int
	tol     float64 // Newton decrement g'H^-1 g below which two full steps finish
}

// newtonResult reports the minimiser's outcome.
type newtonResult struct {
	f     []float64
	value float64
	iter  int
}

var errNotConverged = errors.New("newton: did not converge")

// minimise runs damped Newton from start: the exact Hessian, a Cholesky
// solve (with a growing ridge if the Hessian is not positive definite) and
// Armijo backtracking. The objective is convex for all three links.
func minimise(o objective, start []float64, opts newtonOptions) (newtonResult, error) {
	dim := len(start)
	if opts.maxIter <= 0 {
		opts.maxIter = 100
	}
	if opts.tol <= 0 {
		opts.tol = 1e-10
	}
	f := append([]float64(nil), start...)
	grad := make([]float64, dim)
	hess := make([]float64, dim*dim)
	trial := make([]float64, dim)
	step := make([]float64, dim)
	tgrad := make([]float64, dim)
	thess := make([]float64, dim*dim)
	val := o.value(f, grad, hess)
	if math.IsNaN(val) || math.IsInf(val, 0) {
		return newtonResult{}, errors.New("newton: objective not finite at the start")
	}
	var chol mat.Cholesky
	for it := 1; it <= opts.maxIter; it++ {
		if err := solveNewton(&chol, hess, grad, step, dim); err != nil {
			return newtonResult{}, fmt.Errorf("newton: iteration %d: %w", it, err)
		}
		var dec float64
		for j := range step {
			dec -= grad[j] * step[j]
		}
		if dec < opts.tol {
			// In the region of quadratic convergence: two more full steps
			// take the error far below roundoff, where a line search can no
			// longer tell values apart.
			for polish := 0; polish < 2; polish++ {
				for j := range f {
					f[j] += step[j]
				}
				val = o.value(f, grad, hess)
				if err := solveNewton(&chol, hess, grad, step, dim); err != nil {
					return newtonResult{}, fmt.Errorf("newton: polish: %w", err)
				}
			}
			return newtonResult{f: f, value: val, iter: it}, nil
		}
		// The full step (almost always accepted) is evaluated with its
		// gradient and Hessian, which the next iteration needs: the loss is
		// the same with or without them, so this is the search's own
		// evaluation, not an extra one. Shorter steps are tried loss only.
		t := 1.0
		var tv float64
		accepted, full := false, false
		for ls := 0; ls < 60; ls++ {
			for j := range f {
				trial[j] = f[j] + t*step[j]
			}
			if ls == 0 {
				tv = o.value(trial, tgrad, thess)
			} else {
				tv = o.value(trial, nil, nil)
			}
			if !math.IsNaN(tv) && tv <= val-1e-4*t*dec {
				accepted, full = true, ls == 0
				break
			}
			t *= 0.5
		}
		if !accepted {
			if dec < 1e-14*(1+math.Abs(val)) {
				// roundoff floor: the objective cannot resolve the step
				return newtonResult{f: f, value: val, iter: it}, nil
			}
			return newtonResult{}, fmt.Errorf("newton: iteration %d: line search failed", it)
		}
		copy(f, trial)
		if full {
			val = tv
			grad, tgrad = tgrad, grad
			hess, thess = thess, hess
		} else {
			val = o.value(f, grad, hess)
		}
	}
	return newtonResult{f: f, value: val, iter: opts.maxIter}, errNotConverged
}

// solveNewton sets step = -H^{-1} grad.
func solveNewton(chol *mat.Cholesky, hess, grad, step []float64, dim int) error {
	sym := mat.NewSymDense(dim, append([]float64(nil), hess...))
	var diagMax float64
	for j := 0; j < dim; j++ {
		diagMax = math.Max(diagMax, math.Abs(hess[j*dim+j]))
	}
	ridge := 0.0
	for try := 0; try < 30; try++ {
		if ridge > 0 {
			for j := 0; j < dim; j++ {
				sym.SetSym(j, j, hess[j*dim+j]+ridge)
			}
		}
		if chol.Factorize(sym) {
			g := mat.NewVecDense(dim, append([]float64(nil), grad...))
			var x mat.VecDense
			if err := chol.SolveVecTo(&x, g); err != nil {
				return fmt.Errorf("solve: %w", err)
			}
			for j := range step {
				step[j] = -x.AtVec(j)
			}
			return nil
		}
		if ridge == 0 {
			ridge = 1e-10 * math.Max(diagMax, 1e-300)
		} else {
			ridge *= 10
		}
	}
	return errors.New("hessian is not positive definite")
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
