package weibull

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// WeibullUtility: the evaluation of the private fits against the
// non-private MLE, for internal/eval's Weibull study (evaluation code,
// not an estimator).

// WeibullUtilityRow is the median absolute error of one method at one
// epsilon over Reps releases, against the non-private MLE on the same
// normalised, clamped data.
type WeibullUtilityRow struct {
	Epsilon              float64
	Method               string
	MdAEShape, MdAEScale float64
	Reps                 int
}

// WeibullUtilityResult is the output of WeibullUtility.
type WeibullUtilityResult struct {
	// MLEShape and MLEScale are the reference x* (normalised units).
	MLEShape, MLEScale float64
	Rows               []WeibullUtilityRow
}

// ErrWeibullNoReference is returned by WeibullUtility when the sample has no
// finite MLE to compare with.
var ErrWeibullNoReference = errors.New("no finite mle to compare with")

// WeibullUtility measures MdAE (paper 002, eq. 9) of the shape and scale for
// LSP+TLL, the Laplace baseline and sample-and-aggregate, over reps releases
// at each total epsilon (cfg.Epsilon is ignored). The ladder is computed once
// (it does not depend on epsilon). Use a seeded source for reproducible
// tables; the cost is dominated by SAA's shuffles, O(reps * records).
func WeibullUtility(src dp.Source, c survival.Compressed, cfg WeibullConfig, epsilons []float64, reps int) (WeibullUtilityResult, error) {
	cfg = cfg.WithDefaults()
	cfg.Epsilon = 1
	if err := cfg.Validate(); err != nil {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
	}
	if reps < 1 {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: reps must be positive, got %d", reps)
	}
	for _, e := range epsilons {
		if !(e > 0) || math.IsInf(e, 0) {
			return WeibullUtilityResult{}, fmt.Errorf("weibull utility: epsilon must be positive and finite, got %v", e)
		}
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
	}
	ref, err := survival.FitWeibull(d.compressed())
	if err != nil {
		return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w: %w", ErrWeibullNoReference, err)
	}
	lad := weibullComputeLadder(d, cfg)
	res := WeibullUtilityResult{MLEShape: ref.Shape, MLEScale: ref.Scale}
	B := weibullSAABlocks(d.n, cfg.BlockSize)
	pClamp, lClamp := weibullClampedMLE(d.compressed(), cfg.Gamma, cfg.ScaleBound)
	for _, eps := range epsilons {
		ce := cfg
		ce.Epsilon = eps
		for _, method := range []string{WeibullMethodLSP, WeibullMethodLaplace, WeibullMethodSAA} {
			es := make([]float64, reps)
			el := make([]float64, reps)
			for r := 0; r < reps; r++ {
				var f WeibullFit
				var err error
				switch method {
				case WeibullMethodLSP:
					f, err = weibullFitLSP(src, d, lad, ce)
				case WeibullMethodLaplace:
					f, err = weibullRelease(src, pClamp, lClamp, ce.Gamma, ce.ScaleBound, ce, method, 1)
				case WeibullMethodSAA:
					mp, ml := weibullSAAMeans(src, d, B, ce)
					f, err = weibullRelease(src, mp, ml, ce.Gamma/float64(B), ce.ScaleBound/float64(B), ce, method, B)
				}
				if err != nil {
					return WeibullUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
				}
				es[r] = math.Abs(f.Shape - ref.Shape)
				el[r] = math.Abs(f.Scale - ref.Scale)
			}
			res.Rows = append(res.Rows, WeibullUtilityRow{
				Epsilon: eps, Method: method, MdAEShape: weibullMedian(es), MdAEScale: weibullMedian(el), Reps: reps,
			})
		}
	}
	return res, nil
}

func weibullMedian(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
