package cli

import "github.com/dpsurv/dpsurv/dpfit"

// weibullIntervalFields adds the noise-aware intervals of a private Weibull
// release (dpfit.WeibullIntervals, post-processing of the release) to out:
// shape_lower, shape_upper, scale_lower, scale_upper (null when not
// computed), interval_conf, interval_method and interval_sims. sims < 0
// disables them (null, with the reason in interval_method).
func weibullIntervalFields(out map[string]any, fit dpfit.WeibullFit, sims int, prog *progress) error {
	if sims < 0 {
		for _, k := range []string{"shape_lower", "shape_upper", "scale_lower", "scale_upper", "interval_conf"} {
			out[k] = nil
		}
		out["interval_method"] = "none (disabled by --interval-sims)"
		out["interval_sims"] = 0
		return nil
	}
	prog.setPhase("noise-aware intervals, simulated releases of the mechanism", dpfit.WeibullIntervalSteps(sims))
	iv, err := dpfit.WeibullIntervals(fit, dpfit.WeibullIntervalOptions{Sims: sims, Progress: func(int) { prog.step() }})
	if err != nil {
		return err
	}
	out["shape_lower"] = num(iv.ShapeLower)
	out["shape_upper"] = num(iv.ShapeUpper)
	out["scale_lower"] = num(iv.ScaleLower)
	out["scale_upper"] = num(iv.ScaleUpper)
	out["interval_conf"] = iv.Conf
	out["interval_method"] = iv.Method
	out["interval_sims"] = iv.Sims
	return nil
}
