package regression

import (
	"fmt"
	"math"
)

// Noise-aware coefficient intervals of a discrete-time release (issue 12).
//
// Ext-Out-Pert (and every fallback) releases round_g(f) + g Z per
// coordinate, Z discrete Laplace with P(Z = k) proportional to
// exp(-|k| g/scale) (LatticeNoise; grid g and scale are public and in the
// release). With m the smallest integer with P(|Z| >= m) =
// 2 exp(-m g/scale) / (1 + exp(-g/scale)) <= 1 - conf, the interval
// released ± ((m - 1) g + g/2) holds f with probability at least conf
// (exactly, up to the lattice's discreteness); adding
// CertificateTolerance/lambda makes it hold the exact minimiser f of the
// mean loss plus (lambda/2)||f||^2 on the window's records, the quantity
// the mechanism perturbs (the computed one is certified within that). For
// a fallback f is 0.
//
// What it does not include: sampling error (the minimiser's variation from
// sample to sample) and the ridge's bias. Neither can be computed from the
// release: the sampling covariance needs the data's Hessian, and a
// parametric bootstrap needs the covariates' distribution, which is not
// released; the only data-free bound (Efron–Stein with the per-record
// influence GradientBound/(n lambda)) is GradientBound/(lambda sqrt(2n))
// per coordinate, hundreds of times the noise. At the sizes where the
// release is useful the noise dominates the sampling error (the test
// TestOutputIntervalCoverage reports both coverages). Ext-Obj-Pert's noise
// enters through the data's Hessian and pSGLD's through the chain, so
// their releases get no interval (null, with the reason).

// Interval method descriptions (DiscreteResult.IntervalMethod).
const (
	IntervalNoiseOnly = "noise only: released ± the lattice Laplace noise's two-sided quantile (noise.grid, noise.scale); " +
		"covers the ridge minimiser on the window's records (what the mechanism perturbs; 0 for a fallback); " +
		"sampling error and ridge bias not included (not computable from the release)"
	IntervalNone = "none: this method's noise passes through the data (Ext-Obj-Pert: the Hessian; pSGLD: the chain), " +
		"so no interval can be computed from the release"
)

// OutputIntervals returns per-coefficient lower and upper limits (alpha
// then beta order, as f) at level conf for a private release res. For
// releases without a computable interval (Ext-Obj-Pert and pSGLD that did
// not fall back, the MLE) it returns nil limits and the reason.
func OutputIntervals(res DiscreteResult, conf float64) (lower, upper []float64, method string, err error) {
	if !(conf > 0 && conf < 1) {
		return nil, nil, "", fmt.Errorf("coefficient intervals: conf must be in (0, 1), got %v", conf)
	}
	if res.Noise == nil || !(res.Method == MethodOutput || res.Fallback) {
		return nil, nil, IntervalNone, nil
	}
	g, s := res.Noise.Grid, res.Noise.Scale
	if !(g > 0) || !(s > 0) || math.IsInf(s, 0) {
		return nil, nil, "", fmt.Errorf("coefficient intervals: noise grid %v and scale %v must be positive and finite", g, s)
	}
	r := g / s
	alpha := 1 - conf
	// smallest m with 2 exp(-m r) / (1 + exp(-r)) <= alpha
	m := math.Ceil(math.Log(2/(alpha*(1+math.Exp(-r)))) / r)
	m = math.Max(m, 1)
	half := (m-1)*g + g/2
	if res.Lambda > 0 {
		half += CertificateTolerance / res.Lambda // the computed minimiser's certificate
	}
	f := append(append([]float64(nil), res.Alpha...), res.Beta...)
	lower = make([]float64, len(f))
	upper = make([]float64, len(f))
	for j, v := range f {
		lower[j], upper[j] = v-half, v+half
	}
	return lower, upper, IntervalNoiseOnly, nil
}

// setIntervals fills res's coefficient intervals at level 0.95.
func setIntervals(res *DiscreteResult) error {
	lo, hi, method, err := OutputIntervals(*res, 0.95)
	if err != nil {
		return err
	}
	res.IntervalMethod = method
	if lo == nil {
		return nil
	}
	e := len(res.Alpha)
	res.AlphaLower, res.AlphaUpper = lo[:e], hi[:e]
	res.BetaLower, res.BetaUpper = lo[e:], hi[e:]
	return nil
}
