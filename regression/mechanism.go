package regression

import (
	"fmt"
	"math"
)

// GradientBound is Lemma 4.2's bound on ||grad l(f; d) - grad l(f; d')|| for
// any two records with covariates in the unit ball:
// sum_s sqrt(4 + ||A_s||^2) + max_s sqrt(4 ||A_s||^2 + 4).
func GradientBound(basis [][]float64) float64 {
	var sum, mx float64
	for _, row := range basis {
		a2 := sqNorm(row)
		sum += math.Sqrt(4 + a2)
		mx = math.Max(mx, math.Sqrt(4*a2+4))
	}
	return sum + mx
}

// OutputSensitivity is Lemma 4.3's L2 sensitivity of the minimiser of
// J = (1/n) sum l + (lambda/2)||f||^2: GradientBound / (n lambda). (The
// paper's Algorithm 1 misplaces a bracket; this is the lemma's form.)
func OutputSensitivity(basis [][]float64, n int, lambda float64) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("output sensitivity: n must be >= 1, got %d", n)
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return 0, fmt.Errorf("output sensitivity: lambda must be positive and finite, got %v", lambda)
	}
	return GradientBound(basis) / (float64(n) * lambda), nil
}

// JacobianLoss is the privacy loss spent by the Jacobian of the map from the
// noise b to the perturbed minimiser in Ext-Obj-Pert, at total ridge
// reg = lambda + Delta:
//
//	2 sum_s ln(1 + (||A_s||^2 + 1) / (4 n reg)).
//
// Erratum (beyond mechanisms.md): the paper, and mechanisms.md after it,
// write sqrt(||A_s||^2 + 1) in the numerator. The s-th Hessian term of a
// record is h x^s x^s' with h <= 1/4 and x^s = (A_s, x), whose only non-zero
// eigenvalue is h ||x^s||^2 <= (||A_s||^2 + 1)/4, the squared norm. Since
// ||A_s|| >= 1 (b_1 = 1) the squared form is always the larger, so using it
// can only add noise; the sqrt form understates the loss.
func JacobianLoss(basis [][]float64, n int, reg float64) float64 {
	return jacobianLoss(basis, n, reg, 0.25)
}

// jacobianLoss is JacobianLoss for a loss with psi” <= curv (logit 1/4,
// the bounded-influence cloglog loss CloglogCurvature): 2 sum_s ln(1 +
// curv (||A_s||^2 + 1)/(n reg)).
func jacobianLoss(basis [][]float64, n int, reg, curv float64) float64 {
	var s float64
	den := float64(n) * reg / curv
	for _, row := range basis {
		s += math.Log1p((sqNorm(row) + 1) / den)
	}
	return 2 * s
}

// ObjPertBudget is lines 1–4 of Ext-Obj-Pert (Algorithm 2): with Delta = 0,
// epsilon' = epsilon - JacobianLoss(lambda); if epsilon' < epsilon/2, Delta is
// found by bisection so that JacobianLoss(lambda + Delta) = epsilon/2 (rounded
// to the side where it is <= epsilon/2, so the total never exceeds epsilon)
// and epsilon' = epsilon/2.
func ObjPertBudget(basis [][]float64, n int, lambda, epsilon float64) (epsPrime, delta float64, err error) {
	return ObjPertBudgetFor(basis, n, lambda, epsilon, LinkLogit)
}

// ObjPertBudgetFor is ObjPertBudget for the private loss of link l (its
// Jacobian term with that loss's curvature bound).
func ObjPertBudgetFor(basis [][]float64, n int, lambda, epsilon float64, l Link) (epsPrime, delta float64, err error) {
	curv, err := lossCurvature(l)
	if err != nil {
		return 0, 0, fmt.Errorf("objective perturbation budget: %w", err)
	}
	if n < 1 {
		return 0, 0, fmt.Errorf("objective perturbation budget: n must be >= 1, got %d", n)
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return 0, 0, fmt.Errorf("objective perturbation budget: lambda must be positive and finite, got %v", lambda)
	}
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return 0, 0, fmt.Errorf("objective perturbation budget: epsilon must be positive and finite, got %v", epsilon)
	}
	epsPrime = epsilon - jacobianLoss(basis, n, lambda, curv)
	if epsPrime >= epsilon/2 {
		return epsPrime, 0, nil
	}
	target := epsilon / 2
	lo, hi := 0.0, math.Max(lambda, 1e-12)
	for jacobianLoss(basis, n, lambda+hi, curv) > target {
		lo = hi
		hi *= 2
		if math.IsInf(hi, 0) {
			return 0, 0, fmt.Errorf("objective perturbation budget: no finite delta reaches epsilon/2")
		}
	}
	for it := 0; it < 200 && hi-lo > 1e-15*hi; it++ {
		mid := lo + (hi-lo)/2
		if jacobianLoss(basis, n, lambda+mid, curv) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return target, hi, nil
}

// dotBeta is beta'x, added in coordinate order.
func dotBeta(beta, x []float64) float64 {
	var u float64
	for j, b := range beta {
		u += b * x[j]
	}
	return u
}

func sqNorm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return s
}
