package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/regression"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/survival"
)

// The figures of `fit km --plot`, `fit weibull --plot` and the demo: built
// as a plots.KMSpec from exactly what the command releases (or, for
// --epsilon inf, the non-private reference), so a private figure is
// post-processing of the release and nothing more. A cohort's colour is
// its position in the public label list (plots.CohortColour), the same in
// every figure drawn from that list.

// plotFlagHelp is the --plot flag's help.
const plotFlagHelp = "also draw the figure to this .png (1800 px wide) or .svg file"

// timeUnitHelp is the --time-unit flag's help.
const timeUnitHelp = "unit of the input's times, for the figure's time axis"

// npKMCohort is a non-private KM curve as a figure cohort: its own
// intervals (conf of km), counts and censoring marks, to the last
// follow-up time.
func npKMCohort(label string, pos int, km survival.KMCurve) plots.KMCohort {
	return plots.KMCohort{Label: label, Position: pos, Time: km.Time, Surv: km.Surv, Lower: km.Lower, Upper: km.Upper,
		NRisk: km.NRisk, NCensor: km.NCensor, End: math.NaN(), NoiseFrom: math.NaN()}
}

// privateKMCohort is a released private KM curve as a figure cohort: the
// noise-aware pointwise interval, the simultaneous band where released,
// the noisy counts, the noise-dominated tail from NoiseDominatedFrom and
// the curve's last step drawn to where the release stops (TruncatedAt,
// else the public time_max).
func privateKMCohort(label string, pos int, ck km.CohortKM, timeMax float64) plots.KMCohort {
	cv := ck.Curve
	end := timeMax
	if !math.IsNaN(ck.TruncatedAt) {
		end = ck.TruncatedAt
	}
	c := plots.KMCohort{Label: label, Position: pos, Time: cv.Time, Surv: cv.Surv, Lower: cv.Lower, Upper: cv.Upper,
		NRisk: cv.NRisk, NCensor: cv.NCensor, End: end, NoiseFrom: ck.NoiseDominatedFrom,
		Truncated: !math.IsNaN(ck.TruncatedAt), LowInformation: ck.LowInformation}
	if len(ck.BandLower) == len(cv.Time) && len(ck.BandUpper) == len(cv.Time) {
		c.BandLower, c.BandUpper = ck.BandLower, ck.BandUpper
	}
	return c
}

// privateKMSpec is the figure of a private `fit km` release.
func privateKMSpec(input, unit string, labels []string, res km.KMResult, timeMax float64) plots.KMSpec {
	s := plots.KMSpec{
		Title:    fmt.Sprintf("Kaplan–Meier by cohort, private release (ε = %g) — %s", res.Epsilon, filepath.Base(input)),
		TimeUnit: unit,
		Subtitle: []string{
			fmt.Sprintf("%s, %s, %s; bin width %.4g %s, public time_max %g %s", res.Method, res.Guarantee, shortClause(res.Neighbouring), res.BinWidth, unit, timeMax, unit),
			"Everything drawn is the release: curves, intervals, bands and counts carry the privacy noise (post-processing, no further budget).",
		},
		NoisyCounts: true,
		NoiseNote:   fmt.Sprintf("noise SD of S above %g", km.DefaultNoiseTailSD),
		BandMethod:  "simulated equal-precision",
		XMax:        timeMax,
	}
	if res.EpsilonTotal != res.Epsilon && res.EpsilonTotal > 0 {
		s.Title = fmt.Sprintf("Kaplan–Meier by cohort, private release (ε = %g per point, %g in total) — %s", res.Epsilon, res.EpsilonTotal, filepath.Base(input))
	}
	for _, ck := range res.Cohorts {
		s.Conf = ck.Curve.Conf
		s.Cohorts = append(s.Cohorts, privateKMCohort(labels[ck.Cohort], ck.Cohort, ck, timeMax))
	}
	return s
}

// shortClause is the text before its first " (" (the neighbouring
// relation's name without its explanation).
func shortClause(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		return s[:i]
	}
	return s
}

// nonPrivateKMSpec is the figure of `fit km --epsilon inf`.
func nonPrivateKMSpec(input, unit string, cohorts []plots.KMCohort, conf float64) plots.KMSpec {
	return plots.KMSpec{
		Title:    "Kaplan–Meier by cohort, non-private reference — " + filepath.Base(input),
		TimeUnit: unit,
		Subtitle: []string{"Exact estimates from the records (no privacy): log-transformed pointwise intervals as R's survfit(conf.type = \"log\")."},
		Conf:     conf,
		Cohorts:  cohorts,
	}
}

// writeFigure builds and writes a figure.
func writeFigure(path string, s plots.KMSpec) error {
	f, err := plots.BuildKM(s)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return f.Write(path)
}

// weibullCurve evaluates S(t) = exp(-(t/(scale·time_max))^shape) on a grid
// of [0, xmax], with the band given by lo/hi (NaN for none). The fit works
// on t/time_max clamped into [exp(-omega), 1]; the curve is drawn on the
// unclamped axis, as R's predict on a survreg fit is.
func weibullCurve(label string, pos int, shape, scale, timeMax, xmax float64, band func(t float64) (lo, hi float64)) plots.ParametricCurve {
	const n = 400
	pc := plots.ParametricCurve{Label: label, Position: pos}
	for i := 0; i <= n; i++ {
		t := xmax * float64(i) / n
		pc.Time = append(pc.Time, t)
		pc.Surv = append(pc.Surv, math.Exp(-math.Pow(t/(scale*timeMax), shape)))
		if band != nil {
			lo, hi := band(t)
			pc.Lower = append(pc.Lower, lo)
			pc.Upper = append(pc.Upper, hi)
		}
	}
	return pc
}

// weibullBoxBand is the band of a private Weibull fit: at each t, the
// smallest and largest S(t) over the rectangle [shape_lo, shape_hi] ×
// [scale_lo, scale_hi] of its noise-aware intervals. S is monotone in the
// scale and, at fixed t and scale, in the shape (increasing or decreasing
// as t is below or above the scale), so the extremes are at the corners.
// If each interval covers with 95%, the rectangle and so the band cover
// with at least 90%.
func weibullBoxBand(shLo, shHi, scLo, scHi, timeMax float64) func(t float64) (float64, float64) {
	return func(t float64) (float64, float64) {
		lo, hi := 1.0, 0.0
		for _, k := range []float64{shLo, shHi} {
			for _, l := range []float64{scLo, scHi} {
				s := math.Exp(-math.Pow(t/(l*timeMax), k))
				lo, hi = math.Min(lo, s), math.Max(hi, s)
			}
		}
		return lo, hi
	}
}

// weibullWaldBand is the pointwise band of the non-private Weibull MLE on
// the normalised times (u = t/time_max clamped into [exp(-omega), 1]):
// the delta method on log(-log S(u)) = k (log u - log λ) with the inverse
// observed information of (log k, log λ), z = qnorm((1+conf)/2). It
// returns nil when the information is singular.
func weibullWaldBand(tt []float64, ee []bool, shape, scale, timeMax, omega, conf float64) func(t float64) (float64, float64) {
	lo := math.Exp(-omega)
	k, b := shape, math.Log(scale)
	var haa, hab, hbb, d float64
	for i, raw := range tt {
		u := min(max(raw/timeMax, lo), 1)
		v := math.Log(u) - b
		z := math.Exp(k * v)
		if ee[i] {
			d++
			haa += k * v
		}
		haa -= k * v * z * (1 + k*v)
		hab += k * z * (1 + k*v)
		hbb -= k * k * z
	}
	hab -= k * d
	// Observed information I = -H; covariance = I^{-1}.
	ia, ib, ic := -haa, -hab, -hbb
	det := ia*ic - ib*ib
	if !(det > 0) || !(ia > 0) {
		return nil
	}
	vaa, vab, vbb := ic/det, -ib/det, ia/det
	zq := math.Sqrt2 * math.Erfinv(conf)
	return func(t float64) (float64, float64) {
		if !(t > 0) {
			return 1, 1
		}
		g := k * (math.Log(t/timeMax) - b)
		sd := math.Sqrt(g*g*vaa - 2*g*k*vab + k*k*vbb)
		return math.Exp(-math.Exp(g + zq*sd)), math.Exp(-math.Exp(g - zq*sd))
	}
}

// lowInformationFlag reads a release's low_information flag from a fit's
// JSON fields: true when the fit set it (the hook for releases that carry
// it; absent means not flagged).
func lowInformationFlag(out map[string]any) bool {
	v, ok := out["low_information"].(bool)
	return ok && v
}

// plotLabel returns "cohort X" or, for the pooled curve, "all records".
func plotLabel(only string) string {
	if only == "" {
		return "all records"
	}
	return "cohort " + only
}

// unitOK refuses an empty time unit.
func unitOK(unit string) error {
	if strings.TrimSpace(unit) == "" {
		return fmt.Errorf("--time-unit: empty")
	}
	return nil
}

// plotWeibullNonPrivate draws `fit weibull --epsilon inf --plot`: the
// Kaplan–Meier curve of the same records with its pointwise interval, and
// the fitted Weibull curve with its 95% delta-method band over it.
func plotWeibullNonPrivate(path, input, unit, only string, pos int, tt []float64, ee []bool, fit weibull.WeibullFit, timeMax, omega float64, out map[string]any) error {
	// the fit's data: administrative censoring at the horizon
	tt, ee, _ = censorAtHorizon(tt, ee, timeMax)
	km, err := survival.KaplanMeier(tt, ee, 0.95)
	if err != nil {
		return fmt.Errorf("plot: km: %w", err)
	}
	label := plotLabel(only)
	kc := npKMCohort(label, pos, km)
	if pos < 0 {
		kc.Label = label
	} else {
		kc.Label = only
	}
	xmax := km.Time[len(km.Time)-1]
	band := weibullWaldBand(tt, ee, fit.Shape, fit.Scale, timeMax, omega, 0.95)
	bandName := "95% pointwise band of the fit (delta method on log(-log S))"
	if band == nil {
		bandName = ""
	}
	s := plots.KMSpec{
		Title:    fmt.Sprintf("Weibull fit over Kaplan–Meier, non-private reference — %s, %s", filepath.Base(input), label),
		TimeUnit: unit,
		Subtitle: []string{fmt.Sprintf("Maximum likelihood: shape %.4g, scale %.4g %s (times over time_max = %g, clamped at exp(-%g)); exact estimates, no privacy.",
			fit.Shape, fit.Scale*timeMax, unit, timeMax, omega)},
		Conf:           km.Conf,
		Cohorts:        []plots.KMCohort{kc},
		Parametric:     []plots.ParametricCurve{weibullCurve("Weibull fit, "+label, pos, fit.Shape, fit.Scale, timeMax, xmax, band)},
		ParametricName: "Weibull fit",
		ParametricBand: bandName,
	}
	if lowInformationFlag(out) {
		s.Subtitle = append(s.Subtitle, "LOW INFORMATION (low_information): noise dominates this release; read with care")
	}
	return writeFigure(path, s)
}

// plotWeibullPrivate draws `fit weibull --epsilon E --plot`: the released
// Weibull curve and, where intervals were computed, the envelope of S(t)
// over the rectangle of its shape and scale intervals. No Kaplan–Meier
// curve: the exact one would publish the private data and a private one
// would spend more budget; the figure says so.
func plotWeibullPrivate(path, input, unit, only string, pos int, fit weibull.WeibullFit, timeMax float64, out map[string]any) error {
	return writeFigure(path, weibullPrivateSpec(input, unit, only, pos, fit, timeMax, out))
}

// weibullPrivateSpec is the figure plotWeibullPrivate draws.
func weibullPrivateSpec(input, unit, only string, pos int, fit weibull.WeibullFit, timeMax float64, out map[string]any) plots.KMSpec {
	label := plotLabel(only)
	var band func(float64) (float64, float64)
	bandName := ""
	a, ok0 := asFloat(out["shape_lower"])
	b, ok1 := asFloat(out["shape_upper"])
	c, ok2 := asFloat(out["scale_lower"])
	d, ok3 := asFloat(out["scale_upper"])
	{
		if ok0 && ok1 && ok2 && ok3 && !anyNaN(a, b, c, d) && c > 0 {
			band = weibullBoxBand(a, b, c, d, timeMax)
			bandName = "envelope of S(t) over the 95% shape × scale intervals (noise-aware; at least 90% pointwise)"
		}
	}
	s := plots.KMSpec{
		Title:    fmt.Sprintf("Weibull fit, private release (ε = %g) — %s, %s", fit.Epsilon, filepath.Base(input), label),
		TimeUnit: unit,
		Subtitle: []string{fmt.Sprintf("%s, %s, %s: shape %.4g, scale %.4g %s (time_max %g %s).", fit.Method, fit.Guarantee,
			shortClause(fit.Neighbouring), fit.Shape, fit.Scale*timeMax, unit, timeMax, unit)},
		Parametric:     []plots.ParametricCurve{weibullCurve("Weibull fit, "+label, pos, fit.Shape, fit.Scale, timeMax, timeMax, band)},
		ParametricName: "released Weibull curve",
		ParametricBand: bandName,
		NoKM:           true,
		Notes: []string{"No Kaplan–Meier curve is drawn: the exact curve would publish the private records. " +
			"For a private comparison run fit km at a budget of its own (the budgets add up)."},
	}
	if band == nil {
		s.Notes = append(s.Notes, "No band: intervals were not computed (--interval-sims < 0) or are undefined.")
	}
	if lowInformationFlag(out) {
		s.Subtitle = append(s.Subtitle, "LOW INFORMATION (low_information): noise dominates this release; read with care")
	}
	return s
}

// asFloat reads a number of a fit's JSON fields (float64 or
// schemas.NullableFloat; null is NaN).
func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case schemas.NullableFloat:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return math.NaN(), false
}

func anyNaN(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return true
		}
	}
	return false
}

// jsonFloats reads a JSON array of numbers (null is NaN); nil when absent.
func jsonFloats(v any) []float64 {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]float64, len(arr))
	for i, x := range arr {
		if f, ok := x.(float64); ok {
			out[i] = f
		} else {
			out[i] = math.NaN()
		}
	}
	return out
}

// jsonFloat reads a JSON number (null or absent is NaN).
func jsonFloat(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return math.NaN()
}

// releaseKMCohort is a km release decoded from JSON (a fit-topic message
// or one cohort of `fit km`'s output: the same field names) as a figure
// cohort at label position pos. The last step is drawn to truncated_at,
// else to timeMax (NaN: the last released time).
func releaseKMCohort(r map[string]any, label string, pos int, timeMax float64) plots.KMCohort {
	c := plots.KMCohort{Label: label, Position: pos, Time: jsonFloats(r["time"]), Surv: jsonFloats(r["surv"]),
		Lower: jsonFloats(r["lower"]), Upper: jsonFloats(r["upper"]), NRisk: jsonFloats(r["n_risk"]), NCensor: jsonFloats(r["n_censor"]),
		BandLower: jsonFloats(r["band_lower"]), BandUpper: jsonFloats(r["band_upper"]),
		NoiseFrom: jsonFloat(r["noise_dominated_from"]), End: timeMax}
	if ta := jsonFloat(r["truncated_at"]); !math.IsNaN(ta) {
		c.End, c.Truncated = ta, true
	}
	if li, ok := r["low_information"].(bool); ok {
		c.LowInformation = li
	}
	// Drop what does not line up with the times rather than fail a figure.
	n := len(c.Time)
	for _, p := range []*[]float64{&c.Lower, &c.Upper, &c.NRisk, &c.NCensor, &c.BandLower, &c.BandUpper} {
		if len(*p) != n {
			*p = nil
		}
	}
	if len(c.Surv) != n {
		c.Surv = make([]float64, n)
		for i := range c.Surv {
			c.Surv[i] = math.NaN()
		}
	}
	return c
}

// labelPosition is the position of label in the public label list (-1 if
// absent: drawn grey).
func labelPosition(labels []string, label string) int {
	for i, l := range labels {
		if l == label {
			return i
		}
	}
	return -1
}

// demoSanitizedSpec is the demo's figure of the sanitized topic: KM per
// reported cohort of the locally sanitized records (post-processing of the
// local mechanisms), colours by position in the demo's label list, as in
// its release figure.
func demoSanitizedSpec(curves []plots.KMCohort) plots.KMSpec {
	return plots.KMSpec{
		Title:    "Kaplan–Meier per reported cohort on the sanitized topic (local DP)",
		TimeUnit: "days",
		Subtitle: []string{"Post-processing of TE-Sanitizer (times) and RRR (cohort labels): no central budget. " +
			"Each cohort's curve is debiased for RRR (rrr-debiased-km); its interval includes the debiasing variance and the TE window."},
		Conf:    0.95,
		Cohorts: curves,
	}
}

// demoReleaseSpec is the demo's figure of one window's central km
// releases (fit-topic messages, one per cohort).
func demoReleaseSpec(releases []map[string]any, labels []string) plots.KMSpec {
	s := plots.KMSpec{TimeUnit: "days", NoisyCounts: true, BandMethod: "simulated equal-precision", Conf: 0.95}
	eps, method, guarantee := math.NaN(), "", ""
	for _, r := range releases {
		label := fmt.Sprint(r["cohort"])
		tm := jsonFloat(r["time_max"])
		s.XMax = tm
		s.Cohorts = append(s.Cohorts, releaseKMCohort(r, label, labelPosition(labels, label), tm))
		if u, ok := r["time_unit"].(string); ok && u != "" {
			s.TimeUnit = u
		}
		if c := jsonFloat(r["conf"]); c > 0 && c < 1 {
			s.Conf = c
		}
		if ntsd := jsonFloat(r["noise_tail_sd"]); !math.IsNaN(ntsd) {
			s.NoiseNote = fmt.Sprintf("noise SD of S above %g", ntsd)
		}
		eps = jsonFloat(r["epsilon"])
		method, _ = r["method"].(string)
		guarantee, _ = r["guarantee"].(string)
	}
	s.Title = fmt.Sprintf("Central DP Kaplan–Meier release of one window (ε = %g per cohort)", eps)
	s.Subtitle = []string{fmt.Sprintf("%s, %s; everything drawn is the release (noisy counts, noise-aware intervals).", method, guarantee)}
	return s
}

// discreteBaseline is the survival curve of a discrete-time fit at the
// covariates' public centre (scaled x = 0): hazard h_s = g^-1(alpha'A_s)
// in interval s of q, S(s·time_max/q) = prod_{j<=s} (1 - h_j), drawn as
// steps at the interval ends. Post-processing of the released alpha.
func discreteBaseline(res regression.DiscreteResult) (plots.ParametricCurve, error) {
	q, e, tm := res.Intervals, res.Knots, res.TimeMax
	if !(tm > 0) || len(res.Alpha) != e {
		return plots.ParametricCurve{}, fmt.Errorf("discrete figure: need time_max > 0 and %d alpha values, have %v and %d", e, tm, len(res.Alpha))
	}
	basis, err := regression.SplineBasis(q, e)
	if err != nil {
		return plots.ParametricCurve{}, fmt.Errorf("discrete figure: %w", err)
	}
	inv := func(z float64) float64 {
		switch res.Link {
		case regression.LinkCloglog:
			return -math.Expm1(-math.Exp(z))
		case regression.LinkProbit:
			return 0.5 * math.Erfc(-z/math.Sqrt2)
		default:
			return 1 / (1 + math.Exp(-z))
		}
	}
	pc := plots.ParametricCurve{Label: "discrete-time model", Position: -1, Time: []float64{0}, Surv: []float64{1}}
	surv := 1.0
	for s := 1; s <= q; s++ {
		z := 0.0
		for j, a := range res.Alpha {
			z += a * basis[s-1][j]
		}
		t := float64(s) * tm / float64(q)
		pc.Time = append(pc.Time, t)
		pc.Surv = append(pc.Surv, surv)
		surv *= 1 - inv(z)
		pc.Time = append(pc.Time, t)
		pc.Surv = append(pc.Surv, surv)
	}
	return pc, nil
}

// plotDiscrete draws `fit discrete --plot`: the fitted survival curve at
// the covariates' centre; for the non-private fit over the Kaplan–Meier
// curve of all records, for a private one alone (the exact KM would
// publish the records).
func plotDiscrete(path, input, unit string, res regression.DiscreteResult, d fileData) error {
	pc, err := discreteBaseline(res)
	if err != nil {
		return err
	}
	centre := "the covariates' public centre"
	if len(res.Scaling.Centre) > 0 {
		centre = fmt.Sprintf("the covariates' centre %v", res.Scaling.Centre)
	}
	s := plots.KMSpec{
		TimeUnit:       unit,
		Parametric:     []plots.ParametricCurve{pc},
		ParametricName: fmt.Sprintf("discrete-time %s model (%d intervals), survival at %s", res.Link, res.Intervals, centre),
	}
	if res.Guarantee == "none (non-private)" {
		km, err := survival.KaplanMeier(d.Time, d.Event, 0.95)
		if err != nil {
			return fmt.Errorf("plot: km: %w", err)
		}
		s.Title = "Discrete-time survival model over Kaplan–Meier, non-private reference — " + filepath.Base(input)
		s.Subtitle = []string{"Exact estimates from the records (no privacy). The model curve is for a subject at the covariates' centre; the KM pools every record."}
		s.Cohorts = []plots.KMCohort{npKMCohort("all records", -1, km)}
		s.Conf = km.Conf
		s.XMax = res.TimeMax
		s.XMaxFixed = true
	} else {
		s.Parametric[0].Label = s.ParametricName
		s.Title = fmt.Sprintf("Discrete-time survival model, private release (%s) — %s", res.Method, filepath.Base(input))
		s.Subtitle = []string{fmt.Sprintf("%s, %s: the curve is post-processing of the released alpha.", res.Guarantee, shortClause(res.Neighbouring))}
		s.NoKM = true
		s.Notes = []string{"No Kaplan–Meier curve is drawn: the exact curve would publish the private records."}
	}
	if lowInformationOf(res) {
		s.Subtitle = append(s.Subtitle, "LOW INFORMATION (low_information): noise dominates this release; read with care")
	}
	return writeFigure(path, s)
}

// lowInformationOf reads the low_information flag of a release struct
// through its JSON form (false when the struct has no such field).
func lowInformationOf(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	return lowInformationFlag(m)
}
