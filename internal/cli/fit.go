package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit"
	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/survival"
)

// epsilonFlag accepts a positive number or "inf" (the non-private
// reference path).
type epsilonFlag struct {
	v   float64
	set bool
}

func (e *epsilonFlag) String() string {
	if !e.set {
		return ""
	}
	if math.IsInf(e.v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(e.v, 'g', -1, 64)
}

func (e *epsilonFlag) Set(s string) error {
	if strings.EqualFold(s, "inf") {
		e.v, e.set = math.Inf(1), true
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("epsilon must be a positive number or inf, got %q", s)
	}
	e.v, e.set = v, true
	return nil
}

func (e *epsilonFlag) inf() bool { return math.IsInf(e.v, 1) }

// jsonEpsilon writes +Inf as the string "inf" (JSON has no infinity).
func jsonEpsilon(v float64) any {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return v
}

// num turns NaN (R's NA) and infinities into null.
func num(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func nums(v []float64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = num(x)
	}
	return out
}

func runFit(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(env.Stderr, "usage: dpsurv fit km|weibull|discrete|cox --input F --epsilon E|inf [flags]")
		return errUsage
	}
	switch args[0] {
	case "km":
		return fitKM(env, args[1:])
	case "weibull":
		return fitWeibull(env, args[1:])
	case "discrete":
		return fitDiscrete(env, args[1:])
	case "cox":
		return fitCox(env, args[1:])
	}
	fmt.Fprintf(env.Stderr, "dpsurv fit: unknown model %q (km, weibull, discrete, cox)\n", args[0])
	return errUsage
}

// fileData is a validated file in memory (the fit commands' input).
type fileData struct {
	Time       []float64
	Event      []bool
	Cohort     []int32
	Covariates [][]float64 // [row][cov]
	Site       []string
	Labels     []string
	Dead       map[string]int
}

// readFitFile reads id,time,event,cohort (+covariates, site) through the
// validator; invalid rows are counted (reported on stderr), not used.
func readFitFile(path string, spec schemas.Spec) (fileData, error) {
	mem := memory.DefaultAllocator
	v, err := schemas.NewValidator(spec, mem)
	if err != nil {
		return fileData{}, fmt.Errorf("schema: %w", err)
	}
	d := fileData{Labels: spec.Cohorts, Dead: map[string]int{}}
	err = schemas.ReadFile(path, v, 1<<16, func(good arrow.Record, dead []schemas.DeadLetter) error {
		for _, dl := range dead {
			d.Dead[dl.Reason]++
		}
		n := int(good.NumRows())
		ts := good.Column(schemas.ColTime).(*array.Float64)
		ev := good.Column(schemas.ColEvent).(*array.Boolean)
		co := good.Column(schemas.ColCohort).(*array.Dictionary).Indices().(*array.Int32)
		covs := make([]*array.Float64, len(spec.Covariates))
		for k := range covs {
			covs[k] = good.Column(4 + k).(*array.Float64)
		}
		var site *array.String
		if i := schemas.SiteIndex(good.Schema()); i >= 0 {
			site, _ = good.Column(i).(*array.String)
		}
		for i := range n {
			d.Time = append(d.Time, ts.Value(i))
			d.Event = append(d.Event, ev.Value(i))
			d.Cohort = append(d.Cohort, co.Value(i))
			if len(covs) > 0 {
				row := make([]float64, len(covs))
				for k, c := range covs {
					row[k] = c.Value(i)
				}
				d.Covariates = append(d.Covariates, row)
			}
			if site != nil {
				d.Site = append(d.Site, site.Value(i))
			}
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("read %s: %w", path, err)
	}
	return d, nil
}

func reportDead(w io.Writer, d fileData) {
	if len(d.Dead) > 0 {
		fmt.Fprintf(w, "dpsurv fit: %v invalid rows skipped (not used in the fit)\n", d.Dead)
	}
}

type commonFit struct {
	input  *string
	cohort *string
	eps    *epsilonFlag
	cols   columnFlags
	format *string
}

func addCommonFit(fs *flag.FlagSet) commonFit {
	c := commonFit{
		input:  fs.String("input", "", "input file (.csv or .arrow), required"),
		cohort: fs.String("cohorts", "", "public cohort label list, comma separated (required)"),
		eps:    &epsilonFlag{},
		format: fs.String("format", "json", "output format (json)"),
	}
	fs.Var(c.eps, "epsilon", "privacy budget of the release, or inf for the non-private reference (required)")
	c.cols = addColumnFlags(fs)
	return c
}

func (c commonFit) check(env Env, name string) error {
	switch {
	case *c.input == "":
		fmt.Fprintf(env.Stderr, "dpsurv fit %s: --input is required\n", name)
	case *c.cohort == "":
		fmt.Fprintf(env.Stderr, "dpsurv fit %s: --cohorts is required (the public label list)\n", name)
	case !c.eps.set:
		fmt.Fprintf(env.Stderr, "dpsurv fit %s: --epsilon is required (a number, or inf for the non-private fit)\n", name)
	case *c.format != "json":
		fmt.Fprintf(env.Stderr, "dpsurv fit %s: --format must be json\n", name)
	default:
		return nil
	}
	return errUsage
}

func (c commonFit) spec() schemas.Spec {
	return schemas.Spec{Cohorts: splitList(*c.cohort), TimeUnit: "days", Covariates: splitList(*c.cols.covariates), Columns: c.cols.columns()}
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func kmCurveJSON(label string, c survival.KMCurve) map[string]any {
	return map[string]any{
		"cohort": label, "time": c.Time, "n_risk": nums(c.NRisk), "n_event": nums(c.NEvent), "n_censor": nums(c.NCensor),
		"surv": nums(c.Surv), "std_err": nums(c.StdErr), "lower": nums(c.Lower), "upper": nums(c.Upper),
		"median": num(c.Median), "median_lower": num(c.MedianLower), "median_upper": num(c.MedianUpper),
	}
}

func pairwiseJSON(labels []string, ps []survival.Pairwise) []map[string]any {
	out := make([]map[string]any, 0, len(ps))
	for _, p := range ps {
		out = append(out, map[string]any{"a": labels[p.A], "b": labels[p.B], "chisq": num(p.ChiSq), "p": num(p.P)})
	}
	return out
}

func fitKM(env Env, args []string) error {
	fs := newFlags("fit km", env)
	c := addCommonFit(fs)
	binWidth := fs.Float64("bin-width", 0, "time bin width of the private histogram (time units; default time-max/150)")
	timeMax := fs.Float64("time-max", 0, "public time bound (required for a private fit)")
	method := fs.String("method", "hierarchical", "private method: hierarchical (tree noise on the histogram, the default), histogram (noisy histogram), lnte (baseline; epsilon per time point), or rrr (the input is a sanitized file whose cohort labels went through RRR at --epsilon: debiased KM, no new budget)")
	plot := fs.String("plot", "", "also draw the curves to this .png or .svg file")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.check(env, "km"); err != nil {
		return err
	}
	d, err := readFitFile(*c.input, c.spec())
	if err != nil {
		return err
	}
	reportDead(env.Stderr, d)
	labels := d.Labels
	if *binWidth == 0 {
		*binWidth = dpfit.DefaultBinWidth(*timeMax)
	}
	out := map[string]any{"epsilon": jsonEpsilon(c.eps.v), "bin_width": *binWidth}
	var curves []plots.Curve
	title := ""
	if c.eps.inf() {
		out["method"] = "km"
		out["guarantee"] = "none (non-private)"
		out["neighbouring"] = nil
		out["n"] = len(d.Time)
		var cs []map[string]any
		group := make([]int, len(d.Cohort))
		for i, g := range d.Cohort {
			group[i] = int(g)
		}
		for k, label := range labels {
			var tt []float64
			var ee []bool
			for i := range d.Time {
				if int(d.Cohort[i]) == k {
					tt = append(tt, d.Time[i])
					ee = append(ee, d.Event[i])
				}
			}
			if len(tt) == 0 {
				continue
			}
			km, err := survival.KaplanMeier(tt, ee, 0.95)
			if err != nil {
				return fmt.Errorf("km cohort %s: %w", label, err)
			}
			cs = append(cs, kmCurveJSON(label, km))
			curves = append(curves, plots.Curve{Label: label, Time: km.Time, Surv: km.Surv, Lower: km.Lower, Upper: km.Upper})
		}
		out["cohorts"] = cs
		if len(labels) >= 2 {
			lr, err := survival.LogRankTest(d.Time, d.Event, group, len(labels))
			if err != nil {
				return fmt.Errorf("log-rank: %w", err)
			}
			out["logrank"] = map[string]any{"chisq": num(lr.ChiSq), "df": lr.DF, "p": num(lr.P)}
			pw, err := survival.PairwiseLogRank(d.Time, d.Event, group, len(labels))
			if err != nil {
				return fmt.Errorf("pairwise log-rank: %w", err)
			}
			out["pairwise"] = pairwiseJSON(labels, pw)
		}
		title = "Kaplan–Meier (non-private)"
	} else {
		if !(*timeMax > 0) {
			fmt.Fprintln(env.Stderr, "dpsurv fit km: a private fit needs --time-max (the public time bound)")
			return errUsage
		}
		h, err := dpfit.NewHistogram(*binWidth, *timeMax, len(labels))
		if err != nil {
			return fmt.Errorf("--bin-width/--time-max: %w", err)
		}
		for i := range d.Time {
			if err := h.Add(d.Time[i], d.Event[i], int(d.Cohort[i])); err != nil {
				return fmt.Errorf("histogram: %w", err)
			}
		}
		opts := dpfit.KMOptions{Epsilon: c.eps.v}
		var res dpfit.KMResult
		switch *method {
		case "hierarchical":
			res, err = dpfit.HierarchicalKM(h, dp.NewSecureSource(), opts)
		case "histogram":
			res, err = dpfit.NoisyHistogramKM(h, dp.NewSecureSource(), opts)
		case "lnte":
			res, err = dpfit.LNTE(h, dp.NewSecureSource(), opts)
		case "rrr":
			mech, merr := dp.NewRRR(c.eps.v, len(labels))
			if merr != nil {
				return fmt.Errorf("--epsilon: %w", merr)
			}
			res, err = dpfit.RRRKM(h, mech, opts)
		default:
			fmt.Fprintf(env.Stderr, "dpsurv fit km: unknown --method %q\n", *method)
			return errUsage
		}
		if err != nil {
			return fmt.Errorf("private km: %w", err)
		}
		out["method"] = res.Method
		out["mechanism"] = res.Mechanism
		out["guarantee"] = res.Guarantee
		out["neighbouring"] = res.Neighbouring
		out["epsilon_total"] = res.EpsilonTotal
		out["n"] = res.N
		out["time_max"] = *timeMax
		var cs []map[string]any
		for _, ck := range res.Cohorts {
			m := kmCurveJSON(labels[ck.Cohort], ck.Curve)
			m["n"] = ck.N
			m["truncated_at"] = num(ck.TruncatedAt)
			if ck.NoiseStdErr != nil {
				m["noise_std_err"] = nums(ck.NoiseStdErr)
			}
			m["sampling_std_err"] = nums(ck.SamplingStdErr)
			m["sampling_lower"] = nums(ck.SamplingLower)
			m["sampling_upper"] = nums(ck.SamplingUpper)
			m["median_note"] = ck.MedianNote
			m["noise_dominated_from"] = num(ck.NoiseDominatedFrom)
			m["noise_tail_sd"] = dpfit.DefaultNoiseTailSD
			m["low_information"] = ck.LowInformation
			m["low_information_threshold"] = num(ck.LowInformationThreshold)
			cs = append(cs, m)
			curves = append(curves, splitNoiseTail(labels[ck.Cohort], ck)...)
		}
		out["cohorts"] = cs
		if len(labels) >= 2 {
			var df any
			if res.LogRank.DF >= 1 && !math.IsNaN(res.LogRank.ChiSq) {
				df = res.LogRank.DF
			}
			out["logrank"] = map[string]any{"chisq": num(res.LogRank.ChiSq), "df": df, "p": num(res.LogRank.P),
				"p_naive": num(res.LogRankNaiveP), "calibration": res.LogRankCalibration}
			pw := pairwiseJSON(labels, res.Pairwise)
			for i := range pw {
				if i < len(res.PairwiseNaiveP) {
					pw[i]["p_naive"] = num(res.PairwiseNaiveP[i])
				}
			}
			out["pairwise"] = pw
		}
		if res.LogRankNote != "" {
			out["logrank_note"] = res.LogRankNote
		}
		title = fmt.Sprintf("Kaplan–Meier, %s, epsilon = %g (%s)", res.Method, c.eps.v, res.Guarantee)
	}
	if *plot != "" {
		if err := plots.WriteKM(*plot, title, "time", curves); err != nil {
			return err
		}
	}
	return printJSON(env.Stdout, out)
}

func fitWeibull(env Env, args []string) error {
	fs := newFlags("fit weibull", env)
	c := addCommonFit(fs)
	timeMax := fs.Float64("time-max", 0, "public time bound: times are normalised t/time_max (required for a private fit)")
	omega := fs.Float64("omega", 6, "lower clamp exp(-omega) of normalised times")
	gamma := fs.Float64("gamma", 10, "public bound on the shape")
	rungs := fs.Int("rungs", 500, "LSP ladder rungs")
	method := fs.String("method", "lsp", "lsp (LSP + TLL), laplace or saa (baselines)")
	only := fs.String("cohort", "", "fit only this cohort (default: all records)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.check(env, "weibull"); err != nil {
		return err
	}
	d, err := readFitFile(*c.input, c.spec())
	if err != nil {
		return err
	}
	reportDead(env.Stderr, d)
	var tt []float64
	var ee []bool
	want := -1
	if *only != "" {
		for k, l := range d.Labels {
			if l == *only {
				want = k
			}
		}
		if want < 0 {
			return fmt.Errorf("--cohort: %q is not in --cohorts", *only)
		}
	}
	for i := range d.Time {
		if want < 0 || int(d.Cohort[i]) == want {
			tt = append(tt, d.Time[i])
			ee = append(ee, d.Event[i])
		}
	}
	out := map[string]any{"epsilon": jsonEpsilon(c.eps.v), "cohort": nil}
	if *only != "" {
		out["cohort"] = *only
	}
	if c.eps.inf() {
		norm := 1.0
		if *timeMax > 0 {
			norm = *timeMax
		}
		scaled := make([]float64, len(tt))
		for i, t := range tt {
			scaled[i] = t / norm
		}
		cm, err := survival.CompressChecked(scaled, ee)
		if err != nil {
			return fmt.Errorf("weibull: %w", err)
		}
		fit, err := survival.FitWeibull(cm)
		if err != nil {
			return fmt.Errorf("weibull mle: %w", err)
		}
		out["method"] = "mle"
		out["guarantee"] = "none (non-private)"
		out["neighbouring"] = nil
		out["n"] = len(tt)
		out["shape"] = fit.Shape
		out["scale"] = fit.Scale
		out["loglik"] = fit.LogLik
		if *timeMax > 0 {
			out["time_max"] = *timeMax
		} else {
			out["time_max"] = nil
		}
		return printJSON(env.Stdout, out)
	}
	if !(*timeMax > 0) {
		fmt.Fprintln(env.Stderr, "dpsurv fit weibull: a private fit needs --time-max (the public time bound)")
		return errUsage
	}
	cm, err := survival.CompressChecked(tt, ee)
	if err != nil {
		return fmt.Errorf("weibull: %w", err)
	}
	cfg := dpfit.WeibullConfig{Epsilon: c.eps.v, TimeMax: *timeMax, Omega: *omega, Gamma: *gamma, Rungs: *rungs}.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("weibull flags: %w", err)
	}
	fit, err := dpfit.FitWeibull(dp.NewSecureSource(), cm, cfg, *method)
	if err != nil {
		return fmt.Errorf("private weibull: %w", err)
	}
	out["method"] = fit.Method
	out["guarantee"] = fit.Guarantee
	out["neighbouring"] = fit.Neighbouring
	out["n"] = num(math.Max(fit.N, 0)) // a noisy count, clamped at 0 (post-processing)
	out["shape"] = fit.Shape
	out["scale"] = fit.Scale
	for k, v := range fit.Params {
		out[k] = num(v)
	}
	return printJSON(env.Stdout, out)
}

// splitNoiseTail draws a private curve solid up to its noise-dominated tail
// and dashed after it (CohortKM.NoiseDominatedFrom).
func splitNoiseTail(label string, ck dpfit.CohortKM) []plots.Curve {
	cv := ck.Curve
	cut := len(cv.Time)
	if !math.IsNaN(ck.NoiseDominatedFrom) {
		for i, t := range cv.Time {
			if t >= ck.NoiseDominatedFrom {
				cut = i
				break
			}
		}
	}
	out := []plots.Curve{{Label: label, Time: cv.Time[:cut], Surv: cv.Surv[:cut], Lower: cv.Lower[:cut], Upper: cv.Upper[:cut]}}
	if cut < len(cv.Time) {
		out = append(out, plots.Curve{Label: label + " (noise-dominated)", Time: cv.Time[cut:], Surv: cv.Surv[cut:],
			Lower: cv.Lower[cut:], Upper: cv.Upper[cut:], Dashed: true})
	}
	return out
}
