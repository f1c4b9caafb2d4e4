package eval

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/cmd/dpsurv-eval/inference"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/survival"
)

// weibullUtility: the evaluation of the private Weibull fits against the
// non-private MLE, for the Weibull study (evaluation code, over
// weibull.Prepared: the estimators live in dpfit/weibull).

// wbUtilityRow is the median absolute error of one method at one
// epsilon over Reps releases, against the non-private MLE on the same
// normalised, clamped data.
type wbUtilityRow struct {
	Epsilon              float64
	Method               string
	MdAEShape, MdAEScale float64
	Reps                 int
}

// wbUtilityResult is the output of weibullUtility.
type wbUtilityResult struct {
	// MLEShape and MLEScale are the reference x* (normalised units).
	MLEShape, MLEScale float64
	Rows               []wbUtilityRow
}

// errWeibullNoReference is returned by weibullUtility when the sample has no
// finite MLE to compare with.
var errWeibullNoReference = errors.New("no finite mle to compare with")

// weibullUtility measures MdAE (paper 002, eq. 9) of the shape and scale for
// LSP+TLL, the Laplace baseline and sample-and-aggregate, over reps releases
// at each total epsilon (cfg.Epsilon is ignored). The ladder is computed once
// (it does not depend on epsilon). Use a seeded source for reproducible
// tables; the cost is dominated by SAA's shuffles, O(reps * records).
func weibullUtility(src dp.Source, c survival.Compressed, cfg weibull.WeibullConfig, epsilons []float64, reps int) (wbUtilityResult, error) {
	cfg = cfg.WithDefaults()
	cfg.Epsilon = 1
	if err := cfg.Validate(); err != nil {
		return wbUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
	}
	if reps < 1 {
		return wbUtilityResult{}, fmt.Errorf("weibull utility: reps must be positive, got %d", reps)
	}
	for _, e := range epsilons {
		if !(e > 0) || math.IsInf(e, 0) {
			return wbUtilityResult{}, fmt.Errorf("weibull utility: epsilon must be positive and finite, got %v", e)
		}
	}
	prep, err := weibull.Prepare(c, cfg)
	if err != nil {
		return wbUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
	}
	refShape, refScale, err := prep.MLE()
	if err != nil {
		return wbUtilityResult{}, fmt.Errorf("weibull utility: %w: %w", errWeibullNoReference, err)
	}
	res := wbUtilityResult{MLEShape: refShape, MLEScale: refScale}
	for _, eps := range epsilons {
		for _, method := range []string{weibull.WeibullMethodLSP, weibull.WeibullMethodLaplace, weibull.WeibullMethodSAA} {
			es := make([]float64, reps)
			el := make([]float64, reps)
			for r := range reps {
				f, err := prep.Release(src, method, eps)
				if err != nil {
					return wbUtilityResult{}, fmt.Errorf("weibull utility: %w", err)
				}
				es[r] = math.Abs(f.Shape - refShape)
				el[r] = math.Abs(f.Scale - refScale)
			}
			res.Rows = append(res.Rows, wbUtilityRow{
				Epsilon: eps, Method: method, MdAEShape: inference.Median(es), MdAEScale: inference.Median(el), Reps: reps,
			})
		}
	}
	return res, nil
}
