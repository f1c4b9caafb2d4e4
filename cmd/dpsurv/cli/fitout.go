package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The output formats of `dpsurv fit` (--format). json is the document of
// docs/analysts.md (the fit topic's field names, full precision); table is
// for a person (R print/summary style, rounded, the kind of uncertainty
// said in words); csv is one flat table per fit for a spreadsheet or
// read.csv (15 significant digits as R's write.csv, NA for null). table and csv are rendered from
// the JSON document itself, so they show exactly what it holds.
const (
	formatJSON  = "json"
	formatTable = "table"
	formatCSV   = "csv"
)

func validFormat(f string) bool { return f == formatJSON || f == formatTable || f == formatCSV }

// emitFit writes one fit's document doc (model km, weibull, discrete or
// cox) in the requested format.
func emitFit(w io.Writer, format, model string, doc any) error {
	if format == formatJSON || format == "" {
		return printJSON(w, doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	var buf bytes.Buffer
	if format == formatCSV {
		err = writeFitCSV(&buf, model, m)
	} else {
		err = writeFitTable(&buf, model, m)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// ---- reading the generic document ----

// fnum reads a number; null, absent or not a number is NaN.
func fnum(m map[string]any, k string) float64 {
	if v, ok := m[k].(float64); ok {
		return v
	}
	return math.NaN()
}

func fstr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// fvec reads the array of numbers at key k (null entries NaN); nil when
// absent (jsonFloats).
func fvec(m map[string]any, k string) []float64 { return jsonFloats(m[k]) }

func fstrs(m map[string]any, k string) []string {
	a, _ := m[k].([]any)
	out := make([]string, 0, len(a))
	for _, v := range a {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

func fmaps(m map[string]any, k string) []map[string]any {
	a, _ := m[k].([]any)
	out := make([]map[string]any, 0, len(a))
	for _, v := range a {
		if mm, ok := v.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return math.NaN()
}

// ---- rounding for people ----

// sig formats x to d significant digits without exponent notation for
// ordinary magnitudes (as R prints a coefficient matrix); NA for NaN.
func sig(x float64, d int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "NA"
	}
	if x == 0 {
		return "0"
	}
	ax := math.Abs(x)
	if ax >= 1e7 || ax < 1e-4 {
		return strconv.FormatFloat(x, 'e', d-1, 64)
	}
	dec := d - 1 - int(math.Floor(math.Log10(ax)))
	if dec < 0 {
		dec = 0 // as R prints: digits never blank out the integer part (1022, not 1020)
	}
	// keep trailing zeros: 1.000 says four digits are known, 1 does not
	return strconv.FormatFloat(x, 'f', dec, 64)
}

// noisy formats a private estimate or limit to d significant digits,
// rounding integer digits too (13297 -> 13300 at d = 3): the noise makes
// further digits meaningless.
func noisy(x float64, d int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return sig(x, d)
	}
	if e := int(math.Floor(math.Log10(math.Abs(x)))); e >= d && e < 7 {
		p := math.Pow(10, float64(e-d+1))
		return strconv.FormatFloat(math.Round(x/p)*p, 'f', 0, 64)
	}
	return sig(x, d)
}

// plain formats a number that is exact as given (a time, a df, a level,
// a configuration value): shortest form when it has at most 6 significant
// digits, else 6 significant digits.
func plain(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "NA"
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if len(strings.TrimLeft(strings.NewReplacer(".", "", "-", "").Replace(s), "0")) <= 6 && !strings.Contains(s, "e") {
		return s
	}
	return strings.TrimRight(strings.TrimRight(sig(x, 6), "0"), ".")
}

// prob formats a survival probability or a limit: 3 decimals.
func prob(x float64) string {
	if math.IsNaN(x) {
		return "NA"
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// count formats a count: exact counts as integers, noisy ones rounded
// (their noise is at least of order 1).
func count(x float64) string {
	if math.IsNaN(x) {
		return "NA"
	}
	return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
}

// pval formats a p-value as R's format.pval (2 significant digits, "<
// 2e-16" at machine precision), or "< bound" when only an upper bound is
// released (p null, p_upper set).
func pval(p, upper float64) string {
	switch {
	case math.IsNaN(p) && !math.IsNaN(upper):
		return "< " + sig(upper, 2)
	case math.IsNaN(p):
		return "NA"
	case p < 2.2e-16:
		return "< 2e-16"
	case p < 1e-4:
		return strconv.FormatFloat(p, 'e', 1, 64)
	}
	return sig(p, 2)
}

// epsText is a document's epsilon in words.
func epsText(m map[string]any) string {
	if e, ok := m["epsilon"].(float64); ok {
		return "epsilon = " + plain(e)
	}
	return "epsilon = inf (non-private)"
}

func isPrivate(m map[string]any) bool {
	_, ok := m["epsilon"].(float64)
	return ok
}

// lowInformation renders a low_information flag (and its reason, where
// the document has one) of a document or one of its cohorts.
func lowInformation(w io.Writer, m map[string]any, who string) {
	if b, _ := m["low_information"].(bool); !b {
		return
	}
	why := fstr(m, "low_information_reason")
	if why == "" {
		if t := fnum(m, "low_information_threshold"); !math.IsNaN(t) {
			why = "its noisy record count is below the public threshold " + sig(t, 3)
		} else {
			why = "the noise dominates the release"
		}
	}
	fmt.Fprintf(w, "LOW INFORMATION%s: %s. Treat it as uninformative.\n", who, why)
}

// dataNotes renders what a fit did to its input, where the document says:
// censored_at_horizon (records followed beyond time_max, censored there)
// and clipped_rows (covariate rows shrunk onto the unit ball, non-private
// discrete fits). A private release's counts are noisy.
func dataNotes(w io.Writer, m map[string]any) {
	if v, ok := m["censored_at_horizon"].(float64); ok && v > 0 {
		fmt.Fprintf(w, "Censored at the horizon: %s records followed beyond time_max = %s were censored there (administrative censoring).\n",
			count(v), plain(fnum(m, "time_max")))
	}
	if v, ok := m["clipped_rows"].(float64); ok && v > 0 {
		fmt.Fprintf(w, "Clipped: %s rows had a scaled covariate vector of norm above 1 and were shrunk onto the unit ball.\n", count(v))
	}
}

// header prints what every private table states: method, budget,
// guarantee, neighbouring relation and what is public.
func header(w io.Writer, title string, m map[string]any) {
	fmt.Fprintln(w, title)
	if !isPrivate(m) {
		fmt.Fprintln(w, "Non-private (epsilon = inf): exact statistics of the input, no privacy noise; the intervals are sampling error only.")
		return
	}
	fmt.Fprintf(w, "Private release: %s, guarantee %s.\n", epsText(m), fstr(m, "guarantee"))
	if nb := fstr(m, "neighbouring"); nb != "" {
		fmt.Fprintf(w, "Neighbouring: %s.\n", nb)
	}
	if pub := fstrs(m, "public"); len(pub) > 0 {
		fmt.Fprintf(w, "Treated as public: %s.\n", strings.Join(pub, ", "))
	}
}

func tab(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// ---- tables ----

func writeFitTable(w io.Writer, model string, m map[string]any) error {
	switch model {
	case "km":
		kmTable(w, m)
	case "weibull":
		weibullTable(w, m)
	case "discrete":
		discreteTable(w, m)
	case "cox":
		coxTable(w, m)
	default:
		return fmt.Errorf("no table for model %q", model)
	}
	return nil
}

// reportTimes picks up to five round times in (0, tmax] for the
// survival-at-times table (R: summary(fit, times = ...)).
func reportTimes(tmax float64) []float64 {
	if !(tmax > 0) {
		return nil
	}
	raw := tmax / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := p
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if f*p >= raw {
			step = f * p
			break
		}
	}
	var out []float64
	for t := step; t <= tmax*(1+1e-9) && len(out) < 5; t += step {
		out = append(out, t)
	}
	return out
}

// stepAt returns the index of the last curve row with time <= t (-1 when
// t is before the first row).
func stepAt(times []float64, t float64) int {
	k := -1
	for i, x := range times {
		if x <= t {
			k = i
		}
	}
	return k
}

// timeText formats a time of a binned (private) release to the bin
// width's resolution: a release cannot place a time finer than its bin.
func timeText(x, binWidth float64) string {
	if math.IsNaN(x) || !(binWidth > 0) {
		return plain(x)
	}
	dec := max(0, int(-math.Floor(math.Log10(binWidth))))
	return strconv.FormatFloat(x, 'f', dec, 64)
}

func kmTable(w io.Writer, m map[string]any) {
	private := isPrivate(m)
	bw := fnum(m, "bin_width")
	unit := fstr(m, "time_unit")
	title := "Kaplan-Meier estimate by cohort"
	if private {
		title += " (" + fstr(m, "method") + ")"
	}
	header(w, title, m)
	dataNotes(w, m)
	cohorts := fmaps(m, "cohorts")
	conf, ctype := 0.95, ""
	if len(cohorts) > 0 {
		if c := fnum(cohorts[0], "conf"); !math.IsNaN(c) {
			conf = c
		}
		ctype = fstr(cohorts[0], "conf_type")
	}
	lvl := plain(math.Round(conf*1000)/10) + "%"
	fmt.Fprintln(w)
	tw := tab(w)
	if private {
		fmt.Fprintf(tw, "cohort\tn (noisy)\tmedian\t%s lower\t%s upper\tnoise-dominated from\t\n", lvl, lvl)
	} else {
		fmt.Fprintf(tw, "cohort\tn\tevents\tmedian\t0.95LCL\t0.95UCL\t\n")
	}
	for _, c := range cohorts {
		if private {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", fstr(c, "cohort"), count(fnum(c, "n")), timeText(fnum(c, "median"), bw),
				timeText(fnum(c, "median_lower"), bw), timeText(fnum(c, "median_upper"), bw), timeText(fnum(c, "noise_dominated_from"), bw))
			continue
		}
		ev := 0.0
		for _, d := range fvec(c, "n_event") {
			ev += d
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", fstr(c, "cohort"), count(at(fvec(c, "n_risk"), 0)), count(ev),
			plain(fnum(c, "median")), plain(fnum(c, "median_lower")), plain(fnum(c, "median_upper")))
	}
	tw.Flush()
	for _, c := range cohorts {
		if note := fstr(c, "median_note"); note != "" {
			fmt.Fprintf(w, "cohort %s: median NA: %s.\n", fstr(c, "cohort"), note)
		}
		lowInformation(w, c, " (cohort "+fstr(c, "cohort")+")")
	}

	// survival at round times
	tmax := fnum(m, "time_max")
	if math.IsNaN(tmax) {
		tmax = 0
		for _, c := range cohorts {
			if ts := fvec(c, "time"); len(ts) > 0 {
				tmax = math.Max(tmax, ts[len(ts)-1])
			}
		}
	}
	times := reportTimes(tmax)
	if len(times) > 0 {
		fmt.Fprintf(w, "\nSurvival at selected times (%s):\n", orUnit(unit))
		tw = tab(w)
		if private {
			fmt.Fprintf(tw, "cohort\ttime\tn.risk (noisy)\tsurvival\tse(sampling)\tse(noise)\tlower %s\tupper %s\t\n", lvl, lvl)
		} else {
			fmt.Fprintf(tw, "cohort\ttime\tn.risk\tsurvival\tstd.err\tlower %s\tupper %s\t\n", lvl, lvl)
		}
		for _, c := range cohorts {
			ts := fvec(c, "time")
			s, lo, hi, nr := fvec(c, "surv"), fvec(c, "lower"), fvec(c, "upper"), fvec(c, "n_risk")
			se, sse, nse := fvec(c, "std_err"), fvec(c, "sampling_std_err"), fvec(c, "noise_std_err")
			ne, nc := fvec(c, "n_event"), fvec(c, "n_censor")
			// at risk at t (R's summary(fit, times)): those with time >= t,
			// i.e. a row's risk set less its events and censorings when the
			// row is before t
			riskAt := func(k int, t float64) float64 {
				if ts[k] == t {
					return at(nr, k)
				}
				return at(nr, k) - at(ne, k) - at(nc, k)
			}
			for _, t := range times {
				k := stepAt(ts, t)
				if k < 0 || (!private && t > ts[len(ts)-1]) {
					continue // past the last follow-up: R's summary(fit, times) prints nothing there
				}
				if tr := fnum(c, "truncated_at"); private && (t >= tr || t >= ts[len(ts)-1]+bw) {
					continue // past the released curve
				}
				mark := ""
				if nd := fnum(c, "noise_dominated_from"); private && !math.IsNaN(nd) && t >= nd {
					mark = " *"
				}
				if private {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%s\t%s\t%s\t%s\t\n", fstr(c, "cohort"), plain(t), count(riskAt(k, t)), prob(at(s, k)), mark,
						sig(at(s, k)*at(sse, k), 2), sig(at(s, k)*at(nse, k), 2), prob(at(lo, k)), prob(at(hi, k)))
				} else {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", fstr(c, "cohort"), plain(t), count(riskAt(k, t)), prob(at(s, k)),
						sig(at(s, k)*at(se, k), 2), prob(at(lo, k)), prob(at(hi, k)))
				}
			}
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if private {
		for _, c := range cohorts {
			if tr := fnum(c, "truncated_at"); !math.IsNaN(tr) {
				fmt.Fprintf(w, "cohort %s: curve cut at %s (the noise dominates after it; nothing is released there).\n", fstr(c, "cohort"), timeText(tr, bw))
			}
		}
		fmt.Fprintf(w, "Intervals: pointwise %s, conf.type %q (log-log Greenwood for the sampling error, R's default is \"log\"),\n", lvl, ctype)
		fmt.Fprintln(w, "widened for the privacy noise: lower/upper hold both. se(sampling) is Greenwood's standard error of S")
		fmt.Fprintln(w, "(what R reports), se(noise) the standard deviation the privacy noise adds to S; the noise does not")
		fmt.Fprintln(w, "shrink with more data of the same size. Rows marked * are past noise_dominated_from, where the noise")
		fmt.Fprintln(w, "alone moves S by more than 0.05: indicative only. Counts are noisy. The full curves, the simultaneous")
		fmt.Fprintln(w, "band and the sampling-only interval are in --format json or csv.")
	} else {
		fmt.Fprintf(w, "Intervals: pointwise %s, conf.type %q (R survfit's default: S exp(-/+ z se(log S)), Greenwood).\n", lvl, ctype)
	}
	if lr, ok := m["logrank"].(map[string]any); ok {
		fmt.Fprintln(w)
		df := fnum(lr, "df")
		if private {
			fmt.Fprintf(w, "Log-rank test, calibrated for the noise: Chisq = %s on %s degrees of freedom, p %s\n",
				sig(fnum(lr, "chisq"), 3), plain(df), pwords(fnum(lr, "p"), fnum(lr, "p_upper")))
			fmt.Fprintf(w, "  (p ignoring the noise would be %s: misleading, it rejects a true null far too often)\n", pval(fnum(lr, "p_naive"), math.NaN()))
		} else {
			fmt.Fprintf(w, "Log-rank test: Chisq = %s on %s degrees of freedom, p %s\n", sig(fnum(lr, "chisq"), 3), plain(df), pwords(fnum(lr, "p"), fnum(lr, "p_upper")))
		}
		if note := fstr(lr, "note"); note != "" {
			fmt.Fprintf(w, "  note: %s\n", note)
		}
		if pw := fmaps(lr, "pairwise"); len(pw) > 1 {
			fmt.Fprintln(w, "Pairwise log-rank tests (unadjusted for multiplicity):")
			tw = tab(w)
			fmt.Fprintf(tw, "a\tb\tchisq\tp\t\n")
			for _, p := range pw {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", fstr(p, "a"), fstr(p, "b"), sig(fnum(p, "chisq"), 3), pval(fnum(p, "p"), fnum(p, "p_upper")))
			}
			tw.Flush()
		}
	}
	budgetNote(w, m)
}

// pwords is "= 0.03" or "< 0.005".
func pwords(p, upper float64) string {
	s := pval(p, upper)
	if strings.HasPrefix(s, "<") {
		return s
	}
	return "= " + s
}

func orUnit(u string) string {
	if u == "" {
		return "time units"
	}
	return u
}

// budgetNote reminds that private runs add up.
func budgetNote(w io.Writer, m map[string]any) {
	if isPrivate(m) {
		fmt.Fprintf(w, "\nEach run draws fresh noise and spends %s again on the same data: repeated runs add up their epsilon.\n", epsText(m))
	}
}

func weibullTable(w io.Writer, m map[string]any) {
	private := isPrivate(m)
	title := "Weibull model S(t) = exp(-(t/scale)^shape)"
	if private {
		title += ", " + fstr(m, "method") + " release"
	} else {
		title += ", maximum likelihood (R: survreg(Surv(t, event) ~ 1, dist = \"weibull\"))"
	}
	header(w, title, m)
	unit := orUnit(fstr(m, "time_unit"))
	tmax := fnum(m, "time_max")
	if c := fstr(m, "cohort"); c != "" {
		fmt.Fprintf(w, "Cohort: %s.\n", c)
	}
	if private {
		fmt.Fprintf(w, "Event count (noisy): %s. Times are divided by time_max = %s %s.\n", count(fnum(m, "n")), plain(tmax), unit)
	} else {
		from := ""
		if b, _ := m["time_max_from_data"].(bool); b {
			from = " (the largest time: no --time-max given)"
		}
		fmt.Fprintf(w, "Records: %s, events: %s; times divided by time_max = %s %s%s and clamped into [exp(-omega), 1], %s clamped.\n",
			count(fnum(m, "n")), count(fnum(m, "n_event")), plain(tmax), unit, from, count(fnum(m, "clamped_times")))
	}
	lowInformation(w, m, "")
	dataNotes(w, m)
	conf := fnum(m, "interval_conf")
	lvl := "95%"
	if !math.IsNaN(conf) {
		lvl = plain(math.Round(conf*1000)/10) + "%"
	}
	fmt.Fprintln(w)
	tw := tab(w)
	if private {
		fmt.Fprintf(tw, "\testimate\tlower %s\tupper %s\t\n", lvl, lvl)
	} else {
		fmt.Fprintf(tw, "\testimate\tse(log)\tlower %s\tupper %s\t\n", lvl, lvl)
	}
	// A private scale upper limit beyond scaleCap time_max (a shape
	// interval reaching near 0) is shown as "> cap": its digits say
	// nothing a person can use (up to 1e15 time_max; beyond, it is null).
	const scaleCap = 1e6
	capped := private && fnum(m, "scale_upper") > scaleCap
	row := func(name string, est, se, lo, hi, hiCap float64) {
		if private {
			up := noisy(hi, 3)
			if capped && hiCap > 0 {
				up = "> " + noisy(hiCap, 3)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, noisy(est, 3), noisy(lo, 3), up)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", name, sig(est, 4), sig(se, 3), sig(lo, 4), sig(hi, 4))
		}
	}
	row("shape", fnum(m, "shape"), fnum(m, "log_shape_se"), fnum(m, "shape_lower"), fnum(m, "shape_upper"), 0)
	row("scale (t / time_max)", fnum(m, "scale"), fnum(m, "log_scale_se"), fnum(m, "scale_lower"), fnum(m, "scale_upper"), scaleCap)
	if !math.IsNaN(tmax) {
		row("scale ("+unit+")", fnum(m, "scale")*tmax, fnum(m, "log_scale_se"), fnum(m, "scale_lower")*tmax, fnum(m, "scale_upper")*tmax, scaleCap*tmax)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if private {
		if _, ok := m["shape_lower"].(float64); ok {
			fmt.Fprintln(w, "The intervals are noise-aware: they hold both the sampling error and the privacy noise (computed from")
			fmt.Fprintln(w, "the release alone by simulating the mechanism; interval_method in --format json says how). A scale")
			fmt.Fprintln(w, "beyond time_max is an extrapolation.")
		} else {
			fmt.Fprintf(w, "No intervals: %s.\n", fstr(m, "interval_method"))
		}
		if capped {
			fmt.Fprintf(w, "The scale's upper limit is beyond a million time_max (%s %s): the release does not bound the scale from above in any useful way; --format json has its value.\n",
				noisy(scaleCap*tmax, 3), unit)
		}
		if note := fstr(m, "scale_limit_note"); note != "" {
			fmt.Fprintf(w, "NA scale limit: %s.\n", note)
		}
	} else {
		fmt.Fprintln(w, "Wald intervals exp(log estimate -/+ 1.96 se(log)) from the observed information (sampling error only);")
		fmt.Fprintln(w, "se(log) is the standard error of log shape and log scale (R summary(survreg): Log(scale) = -log shape).")
	}
	budgetNote(w, m)
}

func discreteTable(w io.Writer, m map[string]any) {
	private := isPrivate(m)
	title := fmt.Sprintf("Discrete-time survival model, %s link (hazard per interval: g(h) = alpha'A_s + beta'x)", fstr(m, "link"))
	if private {
		title += ", " + fstr(m, "method") + " release"
	} else {
		title += ", maximum likelihood (R: glm(binomial) on the person-period rows)"
	}
	header(w, title, m)
	fmt.Fprintf(w, "n = %s records; %s intervals over [0, %s]; natural-spline baseline with %s knots.\n",
		count(fnum(m, "n")), plain(fnum(m, "intervals")), plain(fnum(m, "time_max")), plain(fnum(m, "knots")))
	covs := fstrs(m, "covariates")
	if sc, ok := m["scaling"].(map[string]any); ok {
		ce, sd := fvec(sc, "centre"), fvec(sc, "scale")
		var parts []string
		for j, c := range covs {
			parts = append(parts, fmt.Sprintf("%s: (x - %s) / %s", c, plain(at(ce, j)), plain(at(sd, j))))
		}
		if len(parts) > 0 && len(ce) > 0 {
			fmt.Fprintf(w, "beta is per unit of the scaled covariate, %s; rows with norm above 1 are shrunk onto the unit ball.\n", strings.Join(parts, ", "))
		}
	}
	lowInformation(w, m, "")
	dataNotes(w, m)
	fmt.Fprintln(w)
	beta, lo, hi := fvec(m, "beta"), fvec(m, "beta_lower"), fvec(m, "beta_upper")
	tw := tab(w)
	if private && fstr(m, "method") == "newton" {
		se, z, p := fvec(m, "beta_se"), fvec(m, "beta_z"), fvec(m, "beta_p")
		hr, hl, hu := fvec(m, "hazard_ratio"), fvec(m, "hazard_ratio_lower"), fvec(m, "hazard_ratio_upper")
		fmt.Fprintf(tw, "\testimate\tse\tz\tp\tlower 95%%\tupper 95%%\texp(beta)\tlower 95%%\tupper 95%%\t\n")
		for j, c := range covs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c, noisy(at(beta, j), 3), noisy(at(se, j), 3), noisy(at(z, j), 3),
				pval(at(p, j), math.NaN()), noisy(at(lo, j), 3), noisy(at(hi, j), 3), noisy(at(hr, j), 3), noisy(at(hl, j), 3), noisy(at(hu, j), 3))
		}
		tw.Flush()
		fmt.Fprintln(w)
		fmt.Fprintln(w, "estimate: noisy Newton (no ridge, no shrinkage); se and the limits hold the sampling error and the")
		fmt.Fprintln(w, "privacy noise together; exp(beta) is the hazard ratio (cloglog link) or odds ratio (logit) per scaled unit.")
		if im := fstr(m, "coefficient_interval_method"); im != "" && len(lo) == 0 {
			fmt.Fprintf(w, "No intervals: %s.\n", im)
		}
	} else if private {
		deb := fvec(m, "beta_debiased")
		fmt.Fprintf(tw, "\treleased\tdebiased\tlower 95%%\tupper 95%%\t\n")
		for j, c := range covs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", c, noisy(at(beta, j), 3), noisy(at(deb, j), 3), noisy(at(lo, j), 3), noisy(at(hi, j), 3))
		}
		tw.Flush()
		fmt.Fprintln(w)
		fmt.Fprintln(w, "released: the ridge estimate plus privacy noise, shrunk towards 0; read effects from debiased (the")
		fmt.Fprintln(w, "shrinkage undone through the released noisy Hessian) with its interval, which holds the sampling")
		fmt.Fprintln(w, "error, the ridge's bias and the privacy noise together.")
		if im := fstr(m, "coefficient_interval_method"); im != "" && len(lo) == 0 {
			fmt.Fprintf(w, "No intervals: %s.\n", im)
		}
		if b, _ := m["fallback"].(bool); b {
			fmt.Fprintln(w, "FALLBACK: the fit could not be certified; the coefficients are noise around 0 (no information).")
		}
	} else {
		se, z, p := fvec(m, "beta_se"), fvec(m, "beta_z"), fvec(m, "beta_p")
		fmt.Fprintf(tw, "\tEstimate\tStd. Error\tz value\tPr(>|z|)\tlower .95\tupper .95\t\n")
		for j, c := range covs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c, sig(at(beta, j), 4), sig(at(se, j), 3), sig(at(z, j), 3),
				pval(at(p, j), math.NaN()), sig(at(lo, j), 4), sig(at(hi, j), 4))
		}
		alpha, ase := fvec(m, "alpha"), fvec(m, "alpha_se")
		for j := range alpha {
			fmt.Fprintf(tw, "baseline a%d\t%s\t%s\t\t\t%s\t%s\t\n", j+1, sig(alpha[j], 4), sig(at(ase, j), 3),
				sig(at(fvec(m, "alpha_lower"), j), 4), sig(at(fvec(m, "alpha_upper"), j), 4))
		}
		tw.Flush()
		fmt.Fprintln(w)
		if len(se) > 0 {
			fmt.Fprintln(w, "Standard errors from the observed information; Wald 95% intervals (sampling error only).")
		} else if im := fstr(m, "coefficient_interval_method"); im != "" {
			fmt.Fprintf(w, "No standard errors: %s.\n", im)
		}
		if ll := fnum(m, "loglik"); !math.IsNaN(ll) {
			fmt.Fprintf(w, "Log-likelihood: %s\n", sig(ll, 6))
		}
	}
	budgetNote(w, m)
}

func coxTable(w io.Writer, m map[string]any) {
	title := fmt.Sprintf("Cox proportional hazards model, %s ties (R: coxph)", fstr(m, "ties"))
	header(w, title, m)
	if pr, ok := m["projection"].(map[string]any); ok {
		fmt.Fprintf(w, "Covariates projected (%s, %s dimensions): coefficients are of the projections, no formal privacy (guarantee %s).\n",
			fstr(pr, "kind"), plain(fnum(pr, "dims")), fstr(m, "guarantee"))
	}
	fmt.Fprintf(w, "n = %s, number of events = %s\n\n", count(fnum(m, "n")), count(fnum(m, "nevent")))
	names := fstrs(m, "covariates")
	beta := fvec(m, "beta")
	if len(names) != len(beta) {
		names = names[:0]
		for j := range beta {
			names = append(names, fmt.Sprintf("z%d", j+1))
		}
	}
	se, z, p := fvec(m, "se"), fvec(m, "z"), fvec(m, "p")
	hr, lo, hi := fvec(m, "exp_coef"), fvec(m, "exp_coef_lower"), fvec(m, "exp_coef_upper")
	tw := tab(w)
	fmt.Fprintf(tw, "\tcoef\texp(coef)\tse(coef)\tz\tPr(>|z|)\t\n")
	for j, c := range names {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", c, sig(beta[j], 4), sig(at(hr, j), 4), sig(at(se, j), 3), sig(at(z, j), 3), pval(at(p, j), math.NaN()))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tab(w)
	fmt.Fprintf(tw, "\texp(coef)\texp(-coef)\tlower .95\tupper .95\t\n")
	for j, c := range names {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", c, sig(at(hr, j), 4), sig(1/at(hr, j), 4), sig(at(lo, j), 4), sig(at(hi, j), 4))
	}
	tw.Flush()
	if lr, ok := m["lr_test"].(map[string]any); ok {
		fmt.Fprintf(w, "\nLikelihood ratio test = %s on %s df, p %s\n", sig(fnum(lr, "chisq"), 4), plain(fnum(lr, "df")), pwords(fnum(lr, "p"), math.NaN()))
	}
	fmt.Fprintln(w, "Standard errors from the inverse information; Wald 95% intervals (sampling error only).")
}

// ---- CSV ----

// csvNum writes 15 significant digits, as R's write.csv does (0.936, not
// 0.9359999999999999), NA for null.
func csvNum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "NA"
	}
	return strconv.FormatFloat(x, 'g', 15, 64)
}

func writeFitCSV(w io.Writer, model string, m map[string]any) error {
	cw := csv.NewWriter(w)
	var rows [][]string
	switch model {
	case "km":
		cols := []string{"time", "n_risk", "n_event", "n_censor", "surv", "std_err", "lower", "upper"}
		if isPrivate(m) {
			cols = append(cols, "sampling_std_err", "noise_std_err", "sampling_lower", "sampling_upper", "band_lower", "band_upper")
		}
		rows = append(rows, append([]string{"cohort"}, append(cols, "conf_type")...))
		for _, c := range fmaps(m, "cohorts") {
			vs := make([][]float64, len(cols))
			for i, k := range cols {
				vs[i] = fvec(c, k)
			}
			for r := range vs[0] {
				row := []string{fstr(c, "cohort")}
				for i := range cols {
					row = append(row, csvNum(at(vs[i], r)))
				}
				rows = append(rows, append(row, fstr(c, "conf_type")))
			}
		}
	case "weibull":
		rows = append(rows, []string{"term", "estimate", "lower", "upper", "se_log", "unit"})
		tmax := fnum(m, "time_max")
		rows = append(rows,
			[]string{"shape", csvNum(fnum(m, "shape")), csvNum(fnum(m, "shape_lower")), csvNum(fnum(m, "shape_upper")), csvNum(fnum(m, "log_shape_se")), ""},
			[]string{"scale", csvNum(fnum(m, "scale")), csvNum(fnum(m, "scale_lower")), csvNum(fnum(m, "scale_upper")), csvNum(fnum(m, "log_scale_se")), "t / time_max"},
			[]string{"scale", csvNum(fnum(m, "scale") * tmax), csvNum(fnum(m, "scale_lower") * tmax), csvNum(fnum(m, "scale_upper") * tmax), csvNum(fnum(m, "log_scale_se")), orUnit(fstr(m, "time_unit"))})
	case "discrete":
		rows = append(rows, []string{"term", "estimate", "debiased", "se", "z", "p", "lower", "upper"})
		covs := fstrs(m, "covariates")
		alpha, beta := fvec(m, "alpha"), fvec(m, "beta")
		ad, bd := fvec(m, "alpha_debiased"), fvec(m, "beta_debiased")
		for j := range alpha {
			rows = append(rows, []string{fmt.Sprintf("alpha%d", j+1), csvNum(alpha[j]), csvNum(at(ad, j)), csvNum(at(fvec(m, "alpha_se"), j)), "NA", "NA",
				csvNum(at(fvec(m, "alpha_lower"), j)), csvNum(at(fvec(m, "alpha_upper"), j))})
		}
		for j := range beta {
			name := fmt.Sprintf("beta%d", j+1)
			if j < len(covs) {
				name = covs[j]
			}
			rows = append(rows, []string{name, csvNum(beta[j]), csvNum(at(bd, j)), csvNum(at(fvec(m, "beta_se"), j)), csvNum(at(fvec(m, "beta_z"), j)),
				csvNum(at(fvec(m, "beta_p"), j)), csvNum(at(fvec(m, "beta_lower"), j)), csvNum(at(fvec(m, "beta_upper"), j))})
		}
	case "cox":
		rows = append(rows, []string{"term", "coef", "exp_coef", "se", "z", "p", "exp_coef_lower", "exp_coef_upper"})
		covs := fstrs(m, "covariates")
		beta := fvec(m, "beta")
		for j := range beta {
			name := fmt.Sprintf("z%d", j+1)
			if len(covs) == len(beta) {
				name = covs[j]
			}
			rows = append(rows, []string{name, csvNum(beta[j]), csvNum(at(fvec(m, "exp_coef"), j)), csvNum(at(fvec(m, "se"), j)), csvNum(at(fvec(m, "z"), j)),
				csvNum(at(fvec(m, "p"), j)), csvNum(at(fvec(m, "exp_coef_lower"), j)), csvNum(at(fvec(m, "exp_coef_upper"), j))})
		}
	default:
		return fmt.Errorf("no csv for model %q", model)
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}
