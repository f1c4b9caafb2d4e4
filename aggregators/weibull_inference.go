package aggregators

import (
	"math"

	"github.com/dpsurv/dpsurv/dpfit/weibull"
)

// weibullIntervals fills the noise-aware shape and scale intervals of a
// weibull release from the released fit only (weibull.WeibullIntervals:
// post-processing, no budget), simulating data binned like the window's
// histogram. sims < 0 leaves them null.
func weibullIntervals(w *WeibullFields, fit weibull.WeibullFit, sims int, binWidth float64) error {
	w.ShapeLower, w.ShapeUpper, w.ScaleLower, w.ScaleUpper = F(math.NaN()), F(math.NaN()), F(math.NaN()), F(math.NaN())
	w.IntervalConf = F(math.NaN())
	if sims < 0 {
		w.IntervalMethod = "none (disabled by params.interval_sims)"
		return nil
	}
	iv, err := weibull.WeibullIntervals(fit, weibull.WeibullIntervalOptions{Sims: sims, BinWidth: binWidth})
	if err != nil {
		return err
	}
	iv, w.ScaleLimitNote = iv.BoundScaleLimits()
	w.ShapeLower, w.ShapeUpper = F(iv.ShapeLower), F(iv.ShapeUpper)
	w.ScaleLower, w.ScaleUpper = F(iv.ScaleLower), F(iv.ScaleUpper)
	w.IntervalConf, w.IntervalMethod = F(iv.Conf), iv.Method
	return nil
}
