package inference

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/regression"
	"gonum.org/v1/gonum/mat"
)

// CompareConfig is one cell of the side-by-side study of the regression
// methods (docs/inference.md, dpsurv-eval inference-regression): the
// world of RegressionConfig with the given link (logit or cloglog data,
// fitted with that link), Reps fresh data sets of Records records, each
// fitted by Method at Epsilon (regression.MethodMLE: the non-private fit
// and its Wald limits) and by the non-private MLE for its Wald width.
type CompareConfig struct {
	Method  regression.Method
	Link    regression.Link
	Epsilon float64
	Records int
	Reps    int
	Seed    uint64
	// PSGLDSteps is pSGLD's chain length (regression.PSGLDOptions.Steps);
	// 0: the production default. A smoke test shortens it.
	PSGLDSteps int
}

// CompareCell is the outcome of RunCompare. The limits measured are the
// release's published ones; where a method withholds them (Ext-Out-Pert's
// and Ext-Obj-Pert's alpha, pSGLD's beta and alpha) the bootstrap's limits
// recomputed from the release (regression.CoefficientIntervals) are
// measured instead and Withheld* counts those releases.
type CompareCell struct {
	Releases             int
	BetaCovered, BetaN   int
	AlphaCovered, AlphaN int
	BetaWidth, WaldWidth float64 // means over the beta intervals
	BetaWithheld         int
	AlphaWithheld        int
	NoInterval           int // releases without any beta limits (misses)
	Unavailable          string
}

// BetaCoverage is the share of beta intervals holding the true beta.
func (c CompareCell) BetaCoverage() float64 { return ratio(c.BetaCovered, c.BetaN) }

// AlphaCoverage is the share of alpha intervals holding the true alpha.
func (c CompareCell) AlphaCoverage() float64 { return ratio(c.AlphaCovered, c.AlphaN) }

// WidthRatio is the mean beta width over the mean Wald width.
func (c CompareCell) WidthRatio() float64 {
	if c.WaldWidth == 0 {
		return math.NaN()
	}
	return c.BetaWidth / c.WaldWidth
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// waldFit returns the non-private MLE and its Wald standard errors.
func waldFit(data regression.Data, o regression.DiscreteOptions) ([]float64, []float64, error) {
	o.Method = regression.MethodMLE
	mle, err := regression.FitDiscrete(data, o, nil)
	if err != nil {
		return nil, nil, err
	}
	f := append(append([]float64(nil), mle.Alpha...), mle.Beta...)
	h, err := regression.MeanInformation(data, o, f)
	if err != nil {
		return nil, nil, err
	}
	d := len(f)
	var chol mat.Cholesky
	if !chol.Factorize(mat.NewSymDense(d, h)) {
		return nil, nil, fmt.Errorf("MLE information not positive definite")
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		return nil, nil, err
	}
	se := make([]float64, d)
	for j := range se {
		se[j] = math.Sqrt(inv.At(j, j) / float64(data.Len()))
	}
	return f, se, nil
}

// RunCompare runs one cell (see CompareConfig). Ext-Out-Pert and
// Ext-Obj-Pert are proved for the logit and cloglog links (cloglog through
// its bounded-influence loss), and so is the interval release (which
// pSGLD's withheld limits come from): probit cells of those methods
// return Unavailable set.
func RunCompare(cfg CompareConfig) (CompareCell, error) {
	out := CompareCell{}
	if cfg.Link == regression.LinkProbit && cfg.Method != regression.MethodNewton && cfg.Method != regression.MethodMLE {
		out.Unavailable = "logit and cloglog only"
		return out, nil
	}
	if cfg.Records < 2 || cfg.Reps < 1 {
		return out, fmt.Errorf("regression comparison: records %d and reps %d", cfg.Records, cfg.Reps)
	}
	rng := worldRand(cfg.Seed, 'c')
	src := dp.NewSeededSource(cfg.Seed ^ 0xc0a7)
	beta, alpha := worldBeta, worldAlpha
	e := len(alpha)
	base := regression.DiscreteOptions{Link: cfg.Link, TimeMax: 1, Intervals: regression.DefaultIntervals,
		Knots: regression.DefaultKnots, Lambda: regression.DefaultLambda}
	const z = 1.959963984540054
	for r := 0; r < cfg.Reps; r++ {
		data := regressionWorld(rng, cfg.Records, cfg.Link)
		f, se, err := waldFit(data, base)
		if err != nil {
			return out, fmt.Errorf("regression comparison: %w", err)
		}
		for j := range beta {
			out.WaldWidth += 2 * z * se[e+j]
		}
		out.Releases++
		var bl, bh, al, ah []float64
		if cfg.Method == regression.MethodMLE {
			lo, hi := make([]float64, len(f)), make([]float64, len(f))
			for j := range f {
				lo[j], hi[j] = f[j]-z*se[j], f[j]+z*se[j]
			}
			al, ah, bl, bh = lo[:e], hi[:e], lo[e:], hi[e:]
		} else {
			o := base
			o.Method, o.Epsilon = cfg.Method, cfg.Epsilon
			if cfg.Method == regression.MethodPSGLD {
				o.PSGLD.Steps = cfg.PSGLDSteps
			}
			if cfg.Method != regression.MethodNewton {
				o.IntervalFraction = regression.DefaultIntervalFraction
			}
			res, err := regression.FitDiscrete(data, o, src)
			if err != nil {
				return out, fmt.Errorf("regression comparison: %w", err)
			}
			bl, bh, al, ah = res.BetaLower, res.BetaUpper, res.AlphaLower, res.AlphaUpper
			if bl == nil || al == nil {
				if _, clo, chi, _, err := regression.CoefficientIntervals(res, 0.95, 0); err == nil && clo != nil {
					if bl == nil {
						bl, bh = clo[e:], chi[e:]
						out.BetaWithheld++
					}
					if al == nil {
						al, ah = clo[:e], chi[:e]
						out.AlphaWithheld++
					}
				}
			}
		}
		if bl == nil {
			// no limits: the beta intervals count as misses
			out.NoInterval++
			out.BetaN += len(beta)
			continue
		}
		for j, b := range beta {
			out.BetaN++
			if bl[j] <= b && b <= bh[j] {
				out.BetaCovered++
			}
			out.BetaWidth += bh[j] - bl[j]
		}
		for j, a := range alpha {
			if al == nil {
				break
			}
			out.AlphaN++
			if al[j] <= a && a <= ah[j] {
				out.AlphaCovered++
			}
		}
	}
	if out.BetaN > 0 {
		out.BetaWidth /= float64(out.BetaN - len(beta)*out.NoInterval)
	}
	out.WaldWidth /= float64(len(beta) * out.Releases)
	return out, nil
}

// WidthAtSize is the mean newton beta width over the mean Wald width at
// epsilon and n records (reps fresh data sets, logit world).
func WidthAtSize(eps float64, n, reps int, seed uint64) (float64, error) {
	c, err := RunCompare(CompareConfig{Method: regression.MethodNewton, Link: regression.LinkLogit, Epsilon: eps,
		Records: n, Reps: reps, Seed: seed})
	if err != nil {
		return 0, err
	}
	return c.WidthRatio(), nil
}
