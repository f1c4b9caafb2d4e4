package cli

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/survival"
)

// weibullScaleUnit is the scale_unit of every weibull document (as on the
// fit topic).
const weibullScaleUnit = "normalised time (t / time_max)"

// weibullWaldMethod is the interval_method of the non-private fit.
const weibullWaldMethod = "wald (non-private): exp(log estimate -/+ 1.96 se), se of log scale and log shape from the inverse observed information " +
	"at the MLE (R: vcov(survreg), whose (Intercept) is log scale and Log(scale) is -log shape); sampling error only"

// weibullIntervalFields adds the noise-aware intervals of a private Weibull
// release (weibull.WeibullIntervals, post-processing of the release) to out:
// shape_lower, shape_upper, scale_lower, scale_upper (null when not
// computed, or when a scale limit is beyond weibull.WeibullScaleLimitMax:
// then scale_limit_note says so), interval_conf, interval_method, and
// params.interval_sims. sims < 0 disables them (null, with the reason in
// interval_method).
func weibullIntervalFields(out map[string]any, fit weibull.WeibullFit, sims int, prog *progress) error {
	if fit.Params == nil {
		fit.Params = map[string]float64{}
	}
	if sims < 0 {
		for _, k := range []string{"shape_lower", "shape_upper", "scale_lower", "scale_upper", "interval_conf"} {
			out[k] = nil
		}
		out["interval_method"] = "none (disabled by --interval-sims)"
		fit.Params["interval_sims"] = 0
		return nil
	}
	prog.setPhase("noise-aware intervals, simulated releases of the mechanism", weibull.WeibullIntervalSteps(sims))
	iv, err := weibull.WeibullIntervals(fit, weibull.WeibullIntervalOptions{Sims: sims, Progress: func(int) { prog.step() }})
	if err != nil {
		return err
	}
	iv, note := iv.BoundScaleLimits()
	out["shape_lower"] = num(iv.ShapeLower)
	out["shape_upper"] = num(iv.ShapeUpper)
	out["scale_lower"] = num(iv.ScaleLower)
	out["scale_upper"] = num(iv.ScaleUpper)
	if note != "" {
		out["scale_limit_note"] = note
	}
	out["interval_conf"] = iv.Conf
	out["interval_method"] = iv.Method
	fit.Params["interval_sims"] = float64(iv.Sims)
	return nil
}

// weibullWaldFields adds the non-private fit's Wald inference (the
// observed information at the MLE, as R's summary(survreg)) on the data
// the fit saw (normalised by time_max, clamped into [exp(-omega), 1]):
// log_scale_se, log_shape_se, and the 95% limits under the private
// release's names shape_lower ... scale_upper (normalised units),
// interval_conf and interval_method.
func weibullWaldFields(out map[string]any, c survival.Compressed, cfg weibull.WeibullConfig, fit weibull.WeibullFit) error {
	// the MLE's view of the data: t / time_max clamped into
	// [exp(-omega), 1]; the map is non-decreasing, so equal values are
	// neighbours and merge
	lo := math.Exp(-cfg.Omega)
	var norm survival.Compressed
	for i, t := range c.Time {
		u := min(max(t/cfg.TimeMax, lo), 1)
		if k := len(norm.Time) - 1; k >= 0 && norm.Time[k] == u {
			norm.Events[k] += c.Events[i]
			norm.Count[k] += c.Count[i]
			continue
		}
		norm.Time = append(norm.Time, u)
		norm.Events = append(norm.Events, c.Events[i])
		norm.Count = append(norm.Count, c.Count[i])
	}
	w, err := survival.WeibullWaldIntervals(norm, fit.Shape, fit.Scale, 0.95)
	if err != nil {
		return fmt.Errorf("weibull standard errors: %w", err)
	}
	out["log_scale_se"] = w.SEIntercept
	out["log_shape_se"] = w.SELogSigma
	out["shape_lower"], out["shape_upper"] = num(w.ShapeLower), num(w.ShapeUpper)
	out["scale_lower"], out["scale_upper"] = num(w.ScaleLower), num(w.ScaleUpper)
	out["interval_conf"] = w.Conf
	out["interval_method"] = weibullWaldMethod
	return nil
}
