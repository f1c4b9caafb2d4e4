package regression

import (
	"fmt"
	"math"
)

// The cloglog link for the perturbation methods (Ext-Out-Pert, Ext-Obj-Pert)
// and pSGLD, and for the interval release of all three (issue 20).
//
// With m = exp(z) the cloglog person-period loss is psi_0(z) = m for a
// period survived and psi_1(z) = -log(1 - exp(-m)) for the event period.
// psi_0' = psi_0'' = exp(z) is unbounded, so the sensitivity arguments of
// the logit link (|psi'| < 1, psi'' <= 1/4) have no cloglog analogue. A
// private cloglog fit therefore minimises the bounded-influence
// ("Huberised") cloglog loss: psi_1 unchanged, and psi_0 equal to exp(z) up
// to the public knee z0 = CloglogKnee and continued beyond it by
//
//	psi~_0(z0 + t) = exp(z0) (2t + exp(-t)),  t >= 0,
//
// which matches exp(z) at z0 in value, first and second derivative (the
// loss is C^2, as objective perturbation's Jacobian argument needs) and is
// asymptotically linear (slope 2 exp(z0)). The per-period hazard is
// 1 - exp(-exp(z)), so with z0 = 0 the loss is the cloglog likelihood
// wherever the fitted hazard of an interval is at most 1 - 1/e = 0.632.
// The loss is convex (psi~_0'' = exp(z0 - t) > 0).
//
// Constants (z0 = 0), from public quantities only:
//
//   - survival periods: psi~_0' in (0, 2 exp(z0)) = (0, 2) and
//     psi~_0'' in (0, exp(z0)] = (0, 1];
//   - event periods: psi_1' = -u/(e^u - 1) in (-1, 0) (e^u - 1 > u, u =
//     exp(z) > 0) and psi_1'' = u (u e^u - e^u + 1)/(e^u - 1)^2 in (0, 1):
//     u e^u - e^u + 1 = int_0^u t e^t dt > 0, and e^u - 1 = 2 e^{u/2}
//     sinh(u/2) >= u e^{u/2}, so psi_1'' <= (u e^u - e^u + 1)/(u e^u) =
//     1 - (1 - e^-u)/u < 1 (numerically its supremum is 0.4125 at z =
//     0.62).
//
// So every period's psi' lies in (L, U) = (-1, 2), |psi'| < M = 2, and
// 0 < psi'' <= C = 1 (CloglogCurvature). The gradient of a record's loss
// is sum_s psi'(z_s) (A_s, x) over its periods; replacing record d by d'
// changes it by sum_s ((psi'_s - psi''_s) A_s, psi'_s x - psi''_s y) with
// both psi' in [L, U] (0 for a period a record does not reach), each
// term of norm at most sqrt((U - L)^2 ||A_s||^2 + (2M)^2) for x, y in the
// unit ball:
//
//	GradientBoundFor(cloglog) = sum_s sqrt(9 ||A_s||^2 + 16)
//
// (Lemma 4.2's counterpart; Ext-Out-Pert's sensitivity is it over
// n lambda, Lemma 4.3 unchanged). A record's Hessian is sum_s psi''_s
// (A_s, x)(A_s, x)' with psi'' in (0, C]: Ext-Obj-Pert's Jacobian term is
// 2 sum_s ln(1 + C (||A_s||^2 + 1)/(n reg)) (logit: C = 1/4), and the
// interval release's L1 sensitivity is the logit one times 4C (every bound
// in hessian.go is linear in the bound on |w_s - w'_s| and on w_s).
// TestCloglogHuberConstants checks the constants on a fine grid,
// TestCloglogGradientBound the gradient bound on worst-case record pairs,
// TestCloglogExtOutPertWorstCaseRatio and TestHessianWorstCaseRatio the
// published values.

// CloglogKnee is the public knee z0 of the bounded-influence cloglog loss
// of the private cloglog fits: the survival term exp(z) is continued
// beyond it with bounded slope (see above).
const CloglogKnee = 0.0

// CloglogCurvature bounds psi” of the bounded-influence cloglog loss
// (exp(CloglogKnee) = 1 and the event term's supremum < 1).
const CloglogCurvature = 1.0

// cloglogSlopeRange is (U - L) and cloglogSlopeMax M of the
// bounded-influence cloglog loss: psi' in (-1, 2 exp(z0)).
const (
	cloglogSlopeRange = 3.0
	cloglogSlopeMax   = 2.0
)

// linkCloglogHuber is the internal link of the bounded-influence cloglog
// loss; a private fit with LinkCloglog (other than newton, which clips its
// sums instead) runs its model with it. Never accepted from a caller
// (Link.validate) and never published (the result says cloglog).
const linkCloglogHuber Link = "cloglog-bounded"

// cloglogHuberPair is cloglogPair with the survival term continued beyond
// CloglogKnee as above.
func cloglogHuberPair(z float64, y bool) (loss, g, h float64) {
	if y || z <= CloglogKnee {
		return cloglogPair(z, y)
	}
	t := z - CloglogKnee
	k := math.Exp(CloglogKnee)
	et := math.Exp(-t)
	return k * (2*t + et), k * (2 - et), k * et
}

// privateLink is the link the model of a private perturbation or pSGLD
// fit with public link l runs with.
func privateLink(l Link) Link {
	if l == LinkCloglog {
		return linkCloglogHuber
	}
	return l
}

// GradientBoundFor is the bound on ||grad l(f; d) - grad l(f; d')|| of the
// loss a private perturbation fit with link l minimises: Lemma 4.2's
// GradientBound for logit, the bound above for cloglog (the
// bounded-influence loss). Probit has none.
func GradientBoundFor(basis [][]float64, l Link) (float64, error) {
	switch l {
	case LinkLogit, "":
		return GradientBound(basis), nil
	case LinkCloglog, linkCloglogHuber:
		var sum float64
		for _, row := range basis {
			sum += math.Sqrt(cloglogSlopeRange*cloglogSlopeRange*sqNorm(row) + 4*cloglogSlopeMax*cloglogSlopeMax)
		}
		return sum * roundoffMargin, nil
	}
	return 0, fmt.Errorf("link %s has no bounded-gradient private loss (logit or cloglog)", l)
}

// lossCurvature is the bound on psi” of the private loss of link l (1/4
// for logit).
func lossCurvature(l Link) (float64, error) {
	switch l {
	case LinkLogit, "":
		return 0.25, nil
	case LinkCloglog, linkCloglogHuber:
		return CloglogCurvature, nil
	}
	return 0, fmt.Errorf("link %s has no bounded-curvature private loss (logit or cloglog)", l)
}

// OutputSensitivityFor is OutputSensitivity for the private loss of link l.
func OutputSensitivityFor(basis [][]float64, n int, lambda float64, l Link) (float64, error) {
	s, err := OutputSensitivity(basis, n, lambda)
	if err != nil {
		return 0, err
	}
	if l == LinkLogit || l == "" {
		return s, nil
	}
	g, err := GradientBoundFor(basis, l)
	if err != nil {
		return 0, err
	}
	return g / (float64(n) * lambda), nil
}

// HessianL1SensitivityFor is HessianL1Sensitivity for the private loss of
// link l: the logit bound (psi” <= 1/4) times 4 lossCurvature(l).
func HessianL1SensitivityFor(basis [][]float64, p, n int, l Link) (float64, error) {
	s, err := HessianL1Sensitivity(basis, p, n)
	if err != nil {
		return 0, err
	}
	c, err := lossCurvature(l)
	if err != nil {
		return 0, err
	}
	return s * 4 * c, nil
}
