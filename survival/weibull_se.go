package survival

import (
	"errors"
	"math"
)

// WeibullWald holds the Wald inference of a Weibull MLE from the observed
// information, in R survreg's parametrisation: the intercept mu = ln
// Scale and ln sigma = -ln Shape. SEIntercept, SELogSigma and Cov are the
// square roots of the diagonal of the inverse observed information and its
// off-diagonal element, as vcov(survreg) reports them; the limits are
// exp(mu -/+ z se) for the scale and exp(-(ln sigma) -/+ z se) for the
// shape at Conf.
type WeibullWald struct {
	SEIntercept, SELogSigma, Cov float64
	ShapeLower, ShapeUpper       float64
	ScaleLower, ScaleUpper       float64
	Conf                         float64
}

// WeibullWaldIntervals returns the Wald inference of the Weibull MLE
// (shape, scale) on c, S(t) = exp(-(t/scale)^shape). With a = ln scale,
// b = ln shape, p = shape, z_i = p (ln t_i - a) and e_i = exp(z_i), the
// log-likelihood sum d_i (b + (p-1) ln t_i - p a) - sum e_i has second
// derivatives (at the MLE, where sum e_i = sum d_i)
//
//	d2/da2 = -p^2 sum e_i
//	d2/da db = p sum e_i z_i
//	d2/db2 = sum d_i z_i - sum e_i (z_i^2 + z_i)
//
// every sum weighted by the counts of c; the information is minus this
// Hessian, and ln sigma = -b flips the covariance's sign.
func WeibullWaldIntervals(c Compressed, shape, scale, conf float64) (WeibullWald, error) {
	if !(shape > 0) || !(scale > 0) || math.IsInf(shape, 0) || math.IsInf(scale, 0) {
		return WeibullWald{}, errors.New("weibull wald: shape and scale must be positive and finite")
	}
	if !(conf > 0 && conf < 1) {
		return WeibullWald{}, errors.New("weibull wald: conf must be in (0, 1)")
	}
	p, a := shape, math.Log(scale)
	var se, sez, sez2, sdz float64
	for i, t := range c.Time {
		if !(t > 0) {
			return WeibullWald{}, errors.New("weibull wald: times must be positive")
		}
		z := p * (math.Log(t) - a)
		e := math.Exp(z)
		se += c.Count[i] * e
		sez += c.Count[i] * e * z
		sez2 += c.Count[i] * e * z * z
		sdz += c.Events[i] * z
	}
	haa := -p * p * se
	hab := p * sez
	hbb := sdz - sez2 - sez
	// information I = -H; its inverse
	iaa, iab, ibb := -haa, -hab, -hbb
	det := iaa*ibb - iab*iab
	if !(det > 0) || !(iaa > 0) {
		return WeibullWald{}, errors.New("weibull wald: the observed information is not positive definite")
	}
	vaa, vbb, vab := ibb/det, iaa/det, -iab/det
	q := math.Sqrt2 * math.Erfinv(conf)
	w := WeibullWald{SEIntercept: math.Sqrt(vaa), SELogSigma: math.Sqrt(vbb), Cov: -vab, Conf: conf}
	w.ShapeLower, w.ShapeUpper = shape*math.Exp(-q*w.SELogSigma), shape*math.Exp(q*w.SELogSigma)
	w.ScaleLower, w.ScaleUpper = scale*math.Exp(-q*w.SEIntercept), scale*math.Exp(q*w.SEIntercept)
	return w, nil
}
