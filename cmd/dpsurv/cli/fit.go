package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
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

// jsonEpsilon writes +Inf (the non-private reference) as null: JSON has no
// infinity, null is dpsurv's encoding of every non-finite number, and the
// fit topic's epsilon is always a number (docs/analysts.md).
func jsonEpsilon(v float64) any {
	if math.IsInf(v, 1) {
		return nil
	}
	return v
}

// neighbouringNone is the neighbouring relation of a non-private fit (the
// fit topic's field is always a string; regression.NeighbouringNone).
const neighbouringNone = "none (non-private)"

// num encodes NaN (R's NA) and infinities as null.
func num(v float64) schemas.NullableFloat { return schemas.NullableFloat(v) }

func nums(v []float64) []schemas.NullableFloat { return schemas.NullableFloats(v) }

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
// validator (schemas.ReadTable: straight into columns, the covariates
// row-major, duplicate ids checked once at the end); invalid rows are
// counted (reported on stderr), not used. The covariate rows are slices of
// the table's one row-major array (no copy).
func readFitFile(path string, spec schemas.Spec) (fileData, error) {
	v, err := schemas.NewValidator(spec, memory.DefaultAllocator)
	if err != nil {
		return fileData{}, fmt.Errorf("schema: %w", err)
	}
	t, err := schemas.ReadTable(path, v)
	if err != nil {
		return fileData{}, fmt.Errorf("read %s: %w", path, err)
	}
	d := fileData{Labels: spec.Cohorts, Dead: t.Dead, Time: t.Time, Event: t.Event, Cohort: t.Cohort, Site: t.Site}
	// The read's working memory (chunks, scratches, the id hashes and
	// bytes: about 40 bytes a row) is garbage now: a collection here lets
	// the row slices and the fit reuse it instead of faulting in fresh
	// pages (a few ms of marking the columns, which hold no pointers).
	runtime.GC()
	if p := t.P; p > 0 {
		d.Covariates = make([][]float64, t.Len())
		for i := range d.Covariates {
			d.Covariates[i] = t.X[i*p : (i+1)*p : (i+1)*p]
		}
	}
	return d, nil
}

// reportDead prints the invalid rows skipped as a table (reason, rows,
// meaning).
func reportDead(w io.Writer, d fileData) {
	if n := skipped(d.Dead); n > 0 {
		fmt.Fprintf(w, "dpsurv fit: %d invalid row(s) skipped (not used in the fit):\n%s", n, skipTable(d.Dead, "  "))
	}
}

type commonFit struct {
	name       string // km, weibull, discrete, cox
	input      *string
	cohort     *string
	eps        *epsilonFlag
	cols       columnFlags
	format     *string
	maxSkipped *float64
	shape      *inputShape // the input's header, read by spec
	plot       *string     // --plot: the figure's file, "" for none
	unit       *string     // --time-unit: the figure's time axis
}

// read reads the input (readFitFile), reports the rows skipped, and
// refuses a fit from no valid row or with more than --max-skipped of its
// rows skipped (checkRows).
func (c commonFit) read(env Env, spec schemas.Spec) (fileData, error) {
	d, err := readFitFile(*c.input, spec)
	if err != nil {
		return d, err
	}
	sh := inputShape{path: *c.input}
	if c.shape != nil {
		sh = *c.shape
	}
	if err := checkRows("fit", sh, spec, len(d.Time), d.Dead, *c.maxSkipped); err != nil {
		return d, err
	}
	reportDead(env.Stderr, d)
	return d, nil
}

func addCommonFit(fs *flag.FlagSet) commonFit {
	c := commonFit{
		name:       strings.TrimPrefix(fs.Name(), "dpsurv fit "),
		input:      fs.String("input", "", "input file (.csv or .arrow), required"),
		cohort:     fs.String("cohorts", "", "public cohort label list, comma separated (required)"),
		eps:        &epsilonFlag{},
		format:     fs.String("format", "json", "output format: json (full precision, docs/analysts.md), table (R summary style, rounded) or csv"),
		maxSkipped: addMaxSkipped(fs),
		shape:      &inputShape{},
		plot:       fs.String("plot", "", plotFlagHelp),
		unit:       fs.String("time-unit", "days", timeUnitHelp),
	}
	fs.Var(c.eps, "epsilon", "privacy budget of the release, or inf for the non-private reference (required)")
	c.cols = addColumnFlags(fs)
	return c
}

// check reports every missing or bad flag at once. A non-private fit
// (--epsilon inf) needs only --input: it takes the cohort labels from the
// data. A private fit also needs the public bounds: --cohorts and, where the
// command has one (timeMax non-nil), --time-max.
func (c commonFit) check(env Env, name string, timeMax *float64) error {
	var missing []string
	if *c.input == "" {
		missing = append(missing, "--input")
	}
	if !c.eps.set {
		missing = append(missing, "--epsilon")
	}
	private := !c.eps.set || !c.eps.inf()
	if private && *c.cohort == "" {
		missing = append(missing, "--cohorts")
	}
	if private && timeMax != nil && !(*timeMax > 0) {
		missing = append(missing, "--time-max")
	}
	if len(missing) > 0 {
		fmt.Fprintf(env.Stderr, "dpsurv fit %s: missing %s\n", name, strings.Join(missing, ", "))
		fmt.Fprintln(env.Stderr, "  --epsilon E is the privacy budget, or inf for the non-private fit (which needs only --input);")
		fmt.Fprintln(env.Stderr, "  a private fit also needs the public bounds: --cohorts (the label list) and --time-max")
		fmt.Fprintf(env.Stderr, "  example: %s\n", fitExample(name))
		return errUsage
	}
	if !validFormat(*c.format) {
		fmt.Fprintf(env.Stderr, "dpsurv fit %s: --format must be json, table or csv, got %q\n", name, *c.format)
		return errUsage
	}
	return nil
}

// fitExample is a working private command line for each fit, on the
// repository's lung data.
func fitExample(name string) string {
	switch name {
	case "discrete":
		return "dpsurv fit discrete --input data/lung_tte.csv --epsilon 2 --cohorts 1,2 --time-max 1100 --covariates age,ph.karno --centre 62,82 --scale 50,50"
	case "cox":
		return "dpsurv fit cox --input data/lung_tte.csv --epsilon inf --covariates age,ph.karno"
	}
	return "dpsurv fit " + name + " --input data/lung_tte.csv --epsilon 1 --cohorts 1,2 --time-max 1100"
}

// spec returns the input spec. Without --cohorts (allowed only for the
// non-private fits) the label list is the data's own, sorted as R sorts
// factor levels.
//
// A CSV input whose header shows another delimiter than ',' or lacks a
// required column is refused here, before anything is read (preflight).
func (c commonFit) spec() (schemas.Spec, error) {
	spec := schemas.Spec{TimeUnit: "days", Covariates: splitList(*c.cols.covariates), Columns: c.cols.columns()}
	sh, err := sniffInput(*c.input)
	if err != nil {
		return spec, err
	}
	*c.shape = sh
	if err := preflight("fit "+c.name, sh, spec); err != nil {
		return spec, err
	}
	labels := splitList(*c.cohort)
	if len(labels) == 0 {
		if labels, err = audit.ScanLabels(*c.input, *c.cols.cohort); err != nil {
			return schemas.Spec{}, err
		}
	}
	spec.Cohorts = labels
	return spec, nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// kmCohortJSON is one cohort's curve in `dpsurv fit km` output: its label
// and the curve's wire form (schemas.KMCurve, as on the fit topic).
type kmCohortJSON struct {
	Cohort string `json:"cohort"`
	schemas.KMCurve
	Conf float64 `json:"conf"`
	// ConfType is the interval type of lower/upper (R's conf.type):
	// km.ConfTypeLog for the non-private curve, km.ConfTypeLogLog
	// for a private one.
	ConfType string `json:"conf_type"`
}

func kmCurveJSON(label string, c survival.KMCurve) kmCohortJSON {
	return kmCohortJSON{Cohort: label, KMCurve: c.Wire(), Conf: c.Conf, ConfType: km.ConfTypeLogLog}
}

// kmPrivateCohortJSON is one cohort of a private km fit: the curve and
// what the release adds to it (names as in aggregators.KMFields).
type kmPrivateCohortJSON struct {
	kmCohortJSON
	N                    float64                  `json:"n"`
	TruncatedAt          schemas.NullableFloat    `json:"truncated_at"`
	NoiseStdErr          *[]schemas.NullableFloat `json:"noise_std_err,omitempty"`
	LowInformation       bool                     `json:"low_information"`
	LowInformationReason string                   `json:"low_information_reason"`
	schemas.KMInference
}

// pairwiseJSON is the logrank block's pairwise list (as on the fit
// topic); a p-value at its Monte-Carlo floor (pFloor > 0) is released as
// p_upper with p null (dpfit.PValueBound).
func pairwiseJSON(labels []string, ps []survival.Pairwise, pFloor float64) []map[string]any {
	out := make([]map[string]any, 0, len(ps))
	for _, p := range ps {
		pv, pu := dpfit.PValueBound(p.P, pFloor)
		out = append(out, map[string]any{"a": labels[p.A], "b": labels[p.B], "chisq": num(p.ChiSq), "p": num(pv), "p_upper": num(pu)})
	}
	return out
}

func fitKM(env Env, args []string) error {
	fs := newFlags("fit km", env)
	c := addCommonFit(fs)
	binWidth := fs.Float64("bin-width", 0, "time bin width of the private histogram (time units; default time-max/150)")
	timeMax := fs.Float64("time-max", 0, "public time bound (required for a private fit; optional with --epsilon inf): a time beyond it counts as censored at it")
	method := fs.String("method", "hierarchical", "private method: hierarchical (tree noise on the histogram, the default), histogram (noisy histogram), lnte (baseline; epsilon per time point), or rrr (the input is a sanitized file whose cohort labels went through RRR at --epsilon: debiased KM, no new budget)")
	naive := fs.Bool("naive", false, "on a sanitized input (cohort labels by RRR): the naive KM of the reported labels, labelled as such (default: the debiased estimator)")
	budget := addBudgetFlags(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if done, err := fitKMSanitized(env, kmSanitizedFlags{fs: fs, c: c, timeMax: timeMax, binWidth: binWidth, method: method, naive: naive, plot: c.plot, unit: c.unit}); done {
		return err
	}
	prog, spec, d, err := c.beginLoad(&env, "km", timeMax, budget, *method != "rrr")
	if err != nil {
		return err
	}
	defer prog.finish()
	labels := d.Labels
	if *binWidth == 0 {
		*binWidth = km.DefaultBinWidth(*timeMax)
	}
	out := map[string]any{"epsilon": jsonEpsilon(c.eps.v), "bin_width": *binWidth}
	var fig plots.KMSpec
	if c.eps.inf() {
		var curves []plots.KMCohort
		conf := 0.95
		out["method"] = "km"
		out["guarantee"] = "none (non-private)"
		out["neighbouring"] = neighbouringNone
		out["n"] = len(d.Time)
		// With --time-max, the same horizon as a private fit:
		// administrative censoring at time_max.
		var beyond int
		d.Time, d.Event, beyond = censorAtHorizon(d.Time, d.Event, *timeMax)
		if *timeMax > 0 {
			out["time_max"] = *timeMax
		}
		horizonFields(out, *timeMax, beyond, false)
		out["time_unit"] = spec.TimeUnit
		var cs []kmCohortJSON
		group := make([]int, len(d.Cohort))
		for i, g := range d.Cohort {
			group[i] = int(g)
		}
		for k, label := range labels {
			curve, ok, err := cohortKM(d, k)
			if err != nil {
				return fmt.Errorf("km cohort %s: %w", label, err)
			}
			if !ok {
				continue
			}
			cj := kmCurveJSON(label, curve)
			cj.ConfType = km.ConfTypeLog
			cs = append(cs, cj)
			curves = append(curves, npKMCohort(label, k, curve))
			conf = curve.Conf
		}
		fig = nonPrivateKMSpec(*c.input, *c.unit, curves, conf)
		out["cohorts"] = cs
		if len(labels) >= 2 {
			lr, err := survival.LogRankTest(d.Time, d.Event, group, len(labels))
			if err != nil {
				return fmt.Errorf("log-rank: %w", err)
			}
			pw, err := survival.PairwiseLogRank(d.Time, d.Event, group, len(labels))
			if err != nil {
				return fmt.Errorf("pairwise log-rank: %w", err)
			}
			out["logrank"] = map[string]any{"chisq": num(lr.ChiSq), "df": lr.DF, "p": num(lr.P), "p_upper": nil,
				"calibration": km.LogRankCalibrationExact, "pairwise": pairwiseJSON(labels, pw, 0)}
		}
	} else {
		h, err := km.NewHistogram(*binWidth, *timeMax, len(labels))
		if err != nil {
			return fmt.Errorf("--bin-width/--time-max: %w", err)
		}
		for i := range d.Time {
			if err := h.Add(d.Time[i], d.Event[i], int(d.Cohort[i])); err != nil {
				return fmt.Errorf("histogram: %w", err)
			}
		}
		prog.setPhase("private release and its noise simulation", 0)
		opts := km.KMOptions{Epsilon: c.eps.v}
		var res km.KMResult
		switch *method {
		case "hierarchical":
			res, err = km.HierarchicalKM(h, dp.NewSecureSource(), opts)
		case "histogram":
			res, err = km.NoisyHistogramKM(h, dp.NewSecureSource(), opts)
		case "lnte":
			res, err = km.LNTE(h, dp.NewSecureSource(), opts)
		case "rrr":
			mech, merr := dp.NewRRR(c.eps.v, len(labels))
			if merr != nil {
				return fmt.Errorf("--epsilon: %w", merr)
			}
			res, err = km.RRRKM(h, mech, opts)
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
		out["public"] = kmPublic(*method)
		out["n"] = res.N
		out["time_max"] = *timeMax
		horizonFields(out, *timeMax, 0, true)
		out["time_unit"] = spec.TimeUnit
		var cs []kmPrivateCohortJSON
		for _, ck := range res.Cohorts {
			cs = append(cs, privateCohortJSON(labels[ck.Cohort], ck))
		}
		fig = privateKMSpec(*c.input, *c.unit, labels, res, *timeMax)
		out["cohorts"] = cs
		if len(labels) >= 2 {
			var df any
			if res.LogRank.DF >= 1 && !math.IsNaN(res.LogRank.ChiSq) {
				df = res.LogRank.DF
			}
			pw := pairwiseJSON(labels, res.Pairwise, res.LogRankPFloor)
			for i := range pw {
				if i < len(res.PairwiseNaiveP) {
					pw[i]["p_naive"] = num(res.PairwiseNaiveP[i])
				}
			}
			p, pu := dpfit.PValueBound(res.LogRank.P, res.LogRankPFloor)
			lr := map[string]any{"chisq": num(res.LogRank.ChiSq), "df": df, "p": num(p), "p_upper": num(pu),
				"p_naive": num(res.LogRankNaiveP), "calibration": res.LogRankCalibration, "pairwise": pw}
			if res.LogRankNote != "" {
				lr["note"] = res.LogRankNote
			}
			out["logrank"] = lr
		}
		if *method != "rrr" { // rrr: post-processing of a local release, no new budget
			if err := budget.charge(env, *c.input, "fit km --method "+*method, res.EpsilonTotal, out); err != nil {
				return err
			}
		}
	}
	if *c.plot != "" {
		if err := writeFigure(*c.plot, fig); err != nil {
			return err
		}
	}
	return emitFit(env.Stdout, *c.format, "km", out)
}

// kmPublic is the "public" list of a private `fit km` release: what it
// does not protect. The central methods are add/remove-one (the record
// count is protected, n is the sum of noisy cells); LNTE is analysed under
// replace-one, so its record count is public; RRR is local (only the
// cohort label is randomised: times and events are not protected).
func kmPublic(method string) []string {
	out := []string{"time_max", "bin_width", "cohorts"}
	switch method {
	case "lnte":
		out = append(out, "n (record count)")
	case "rrr":
		out = append(out, "n (record count)", "times", "events")
	}
	return out
}

// weibullConfigPublic is the "public" list of a private `fit weibull` release
// (the windowed release lists its window instead: weibullWindowPublic):
// the configuration (the params fields) and, for SAA (replace-one: its
// block count is a function of n), the record count. LSP+TLL and the
// Laplace baseline are add/remove-one ("n" is TLL's noisy event count).
func weibullConfigPublic(method string) []string {
	out := []string{"time_max", "omega", "gamma", "rungs", "tolerance"}
	switch method {
	case weibull.WeibullMethodLaplace:
		out = append(out, "scale_bound")
	case weibull.WeibullMethodSAA:
		out = append(out, "scale_bound", "block_size", "record count")
	}
	return out
}

func fitWeibull(env Env, args []string) error {
	fs := newFlags("fit weibull", env)
	c := addCommonFit(fs)
	timeMax := fs.Float64("time-max", 0, "public time bound: times are normalised t/time_max, a time beyond it counts as censored at it (required for a private fit)")
	omega := fs.Float64("omega", 6, "lower clamp exp(-omega) of normalised times")
	gamma := fs.Float64("gamma", 10, "public bound on the shape")
	rungs := fs.Int("rungs", 500, "LSP ladder rungs")
	method := fs.String("method", "lsp", "lsp (LSP + TLL), laplace or saa (baselines)")
	only := fs.String("cohort", "", "fit only this cohort (default: all records)")
	isims := fs.Int("interval-sims", 0, "simulated releases per candidate shape behind the noise-aware shape/scale intervals (lsp; 0 = default, negative = no intervals)")
	budget := addBudgetFlags(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	prog, spec, d, err := c.beginLoad(&env, "weibull", timeMax, budget, true)
	if err != nil {
		return err
	}
	defer prog.finish()
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
		// The non-private reference. With --time-max it fits exactly the
		// model the private fit estimates: times divided by time_max,
		// raised to exp(-omega), those beyond 1 censored at 1 (the
		// horizon). Without it, the public bound is replaced by the
		// largest time (this path is non-private), so time-0 rows are
		// clamped to exp(-omega) of it rather than fatal.
		tmax, fromData := *timeMax, false
		if !(tmax > 0) {
			fromData = true
			for _, t := range tt {
				tmax = max(tmax, t)
			}
			if !(tmax > 0) {
				return fmt.Errorf("weibull: no positive time in the input")
			}
		}
		cm, err := survival.CompressChecked(tt, ee)
		if err != nil {
			return fmt.Errorf("weibull: %w", err)
		}
		cfg := weibull.WeibullConfig{Epsilon: math.Inf(1), TimeMax: tmax, Omega: *omega, Gamma: *gamma, Rungs: *rungs}.WithDefaults()
		fit, err := weibull.FitWeibull(nil, cm, cfg, "")
		if err != nil {
			return fmt.Errorf("weibull mle: %w", err)
		}
		lo := math.Exp(-cfg.Omega) * tmax
		clamped, beyond := 0, 0
		for _, t := range tt {
			switch {
			case t > tmax:
				beyond++
			case t < lo:
				clamped++
			}
		}
		out["method"] = "mle"
		out["guarantee"] = "none (non-private)"
		out["neighbouring"] = neighbouringNone
		out["n"] = len(tt)
		out["shape"] = fit.Shape
		out["scale"] = fit.Scale
		out["scale_time_units"] = fit.Scale * tmax
		out["time_max"] = tmax
		out["time_max_from_data"] = fromData
		out["omega"] = cfg.Omega
		out["clamped_times"] = clamped // raised to exp(-omega) time_max
		out["low_information"], out["low_information_reason"] = false, ""
		horizonFields(out, tmax, beyond, false)
		out["n_event"] = fit.N // the exact event count (n is the record count)
		out["scale_unit"] = weibullScaleUnit
		out["time_unit"] = spec.TimeUnit
		if err := weibullWaldFields(out, cm, cfg, fit); err != nil {
			return err
		}
		if *c.plot != "" {
			if err := plotWeibullNonPrivate(*c.plot, *c.input, *c.unit, *only, want, tt, ee, fit, tmax, cfg.Omega, out); err != nil {
				return err
			}
		}
		return emitFit(env.Stdout, *c.format, "weibull", out)
	}
	if !(*timeMax > 0) {
		fmt.Fprintln(env.Stderr, "dpsurv fit weibull: a private fit needs --time-max (the public time bound)")
		return errUsage
	}
	cm, err := survival.CompressChecked(tt, ee)
	if err != nil {
		return fmt.Errorf("weibull: %w", err)
	}
	cfg := weibull.WeibullConfig{Epsilon: c.eps.v, TimeMax: *timeMax, Omega: *omega, Gamma: *gamma, Rungs: *rungs}.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("weibull flags: %w", err)
	}
	prog.setPhase("private fit", 0)
	fit, err := weibull.FitWeibull(dp.NewSecureSource(), cm, cfg, *method)
	if err != nil {
		return fmt.Errorf("private weibull: %w", err)
	}
	out["method"] = fit.Method
	out["guarantee"] = fit.Guarantee
	out["neighbouring"] = fit.Neighbouring
	out["public"] = weibullConfigPublic(fit.Method)
	out["n"] = num(math.Max(fit.N, 0)) // a noisy count, clamped at 0 (post-processing)
	out["shape"] = fit.Shape
	out["scale"] = fit.Scale
	horizonFields(out, *timeMax, 0, true)
	if err := weibullIntervalFields(out, fit, *isims, prog); err != nil {
		return fmt.Errorf("private weibull: %w", err)
	}
	out["low_information"], out["low_information_reason"] = weibullLowInformation(out, fit)
	out["params"] = fit.Params
	out["time_max"] = *timeMax
	out["time_unit"] = spec.TimeUnit
	out["scale_unit"] = weibullScaleUnit
	if err := budget.charge(env, *c.input, "fit weibull --method "+fit.Method, fit.Epsilon, out); err != nil {
		return err
	}
	if *c.plot != "" {
		if err := plotWeibullPrivate(*c.plot, *c.input, *c.unit, *only, want, fit, *timeMax, out); err != nil {
			return err
		}
	}
	return emitFit(env.Stdout, *c.format, "weibull", out)
}

// privateCohortJSON is one cohort of a private KM release as `fit km`
// prints it (the fit topic's km fields).
func privateCohortJSON(label string, ck km.CohortKM) kmPrivateCohortJSON {
	m := kmPrivateCohortJSON{
		kmCohortJSON: kmCurveJSON(label, ck.Curve), N: ck.N, TruncatedAt: num(ck.TruncatedAt),
		LowInformation: ck.LowInformation, LowInformationReason: ck.LowInformationReason, KMInference: ck.Inference(),
	}
	if ck.NoiseStdErr != nil {
		ns := nums(ck.NoiseStdErr)
		m.NoiseStdErr = &ns
	}
	return m
}
