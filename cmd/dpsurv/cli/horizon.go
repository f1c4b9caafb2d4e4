package cli

import (
	"math"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/schemas"
)

// HorizonRule is the horizon rule every fit states (JSON "horizon_rule"):
// administrative censoring at the public time_max (mechanisms.md section
// 0, erratum "time beyond the horizon").
const HorizonRule = aggregators.HorizonRule

// censoredAtHorizonWithheld is the note of a private release's withheld
// count (JSON "censored_at_horizon_note").
const censoredAtHorizonWithheld = "withheld: an exact count of private records, which the release's epsilon does not cover"

// censorAtHorizon returns copies of times and events with every time
// beyond tMax replaced by (tMax, censored), and how many there were. tMax
// <= 0 or +Inf means no horizon (the inputs are returned as they are).
func censorAtHorizon(times []float64, events []bool, tMax float64) ([]float64, []bool, int) {
	if !(tMax > 0) || math.IsInf(tMax, 1) {
		return times, events, 0
	}
	n := 0
	for _, t := range times {
		if t > tMax {
			n++
		}
	}
	if n == 0 {
		return times, events, 0
	}
	tt := append([]float64(nil), times...)
	ee := append([]bool(nil), events...)
	for i, t := range tt {
		if t > tMax {
			tt[i], ee[i] = tMax, false
		}
	}
	return tt, ee, n
}

// horizonFields adds the horizon rule and the count censored at it to a
// fit's JSON. A non-private fit reports the exact count (nothing is
// protected there); a private release withholds it (null, with a note):
// it is an exact function of the private records, outside the release's
// guarantee, whether or not n is public.
func horizonFields(out map[string]any, tMax float64, censored int, private bool) {
	if !(tMax > 0) || math.IsInf(tMax, 1) {
		return
	}
	out["horizon_rule"] = HorizonRule
	if private {
		out["censored_at_horizon"] = nil
		out["censored_at_horizon_note"] = censoredAtHorizonWithheld
		return
	}
	out["censored_at_horizon"] = censored
}

// weibullLowInformation applies weibull.WeibullLowInformation to a private
// `fit weibull` release, with the shape interval as out holds it (null when
// --interval-sims is negative).
func weibullLowInformation(out map[string]any, fit weibull.WeibullFit) (bool, string) {
	get := func(k string) float64 {
		if v, ok := out[k].(schemas.NullableFloat); ok {
			return float64(v)
		}
		return math.NaN()
	}
	iv := &weibull.WeibullInterval{ShapeLower: get("shape_lower"), ShapeUpper: get("shape_upper")}
	return weibull.WeibullLowInformation(fit, iv)
}
