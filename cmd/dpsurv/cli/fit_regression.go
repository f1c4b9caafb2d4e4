package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/regression"
)

func parseFloats(flagName, s string) ([]float64, error) {
	parts := splitList(s)
	if len(parts) == 0 {
		return nil, nil
	}
	out := make([]float64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", flagName, p)
		}
		out[i] = v
	}
	return out, nil
}

// parseScaling parses --centre and --scale (nil where a flag is empty).
func parseScaling(centre, scale string) (cs, ss []float64, err error) {
	if cs, err = parseFloats("--centre", centre); err != nil {
		return nil, nil, err
	}
	ss, err = parseFloats("--scale", scale)
	return cs, ss, err
}

func fitDiscrete(env Env, args []string) error {
	fs := newFlags("fit discrete", env)
	c := addCommonFit(fs)
	method := fs.String("method", "", "newton (noisy Newton on clipped scores: the default private method; beta, baseline and hazard-ratio limits, z and p), mle (non-private; the default with --epsilon inf), or the papers' baselines output (Ext-Out-Pert), objective (Ext-Obj-Pert), psgld")
	intervals := fs.Int("intervals", regression.DefaultIntervals, "number of discrete time intervals q")
	knots := fs.Int("knots", regression.DefaultKnots, "spline knots e")
	lambda := fs.Float64("lambda", regression.DefaultLambda, "ridge Lambda of Ext-Out-Pert / Ext-Obj-Pert")
	timeMax := fs.Float64("time-max", 0, "public time bound (required for a private fit; 0 with mle means the largest time): a time beyond it counts as censored at it")
	link := fs.String("link", "logit", "logit, cloglog or probit (probit: newton, mle and psgld only; with cloglog exp(beta) is the grouped-time hazard ratio; output, objective and psgld fit it through its bounded-influence loss)")
	centre := fs.String("centre", "", "public per-covariate centres, comma separated (required for a private fit; with --epsilon inf and no --centre/--scale: from the data, stated)")
	scale := fs.String("scale", "", "public per-covariate scales, comma separated (required for a private fit, see --centre)")
	dataScaling := fs.Bool("data-scaling", false, "non-private only: the paper's data-derived normalisation (the default with --epsilon inf and no --centre/--scale)")
	ridge := fs.Bool("ridge", false, "mle only: fit with the (lambda/2)||f||^2 penalty")
	intervalFrac := fs.Float64("interval-epsilon-fraction", regression.DefaultIntervalFraction,
		"output and objective (logit) only: share of --epsilon spent on the noisy Hessians behind the coefficients' intervals (0: none; at most 0.5); does not apply to newton, which releases its own Hessians")
	var ps regression.PSGLDOptions
	fs.Float64Var(&ps.V, "psgld-v", 0, "psgld: loss bound v of C_v (0: 2 ln n)")
	fs.Float64Var(&ps.Sigma, "psgld-sigma", 0, "psgld: Gaussian prior precision (0: 1e-2 * 2v/epsilon)")
	fs.IntVar(&ps.Minibatch, "psgld-minibatch", 0, "psgld: records per step k (0: 200)")
	fs.IntVar(&ps.Steps, "psgld-steps", 0, "psgld: chain length (0: from --psgld-epochs)")
	fs.Float64Var(&ps.Epochs, "psgld-epochs", 0, "psgld: passes over the data when --psgld-steps is 0 (0: 250)")
	fs.Float64Var(&ps.Tau, "psgld-tau", 0, "psgld: step decay tau (0: 0.51)")
	fs.Float64Var(&ps.Lambda, "psgld-lambda", 0, "psgld: preconditioner damping lambda (0: 1e-5)")
	fs.Float64Var(&ps.Mu, "psgld-mu", 0, "psgld: preconditioner decay mu (0: 0.99)")
	fs.Float64Var(&ps.StepScale, "psgld-step-scale", 0, "psgld: step scale a in a (b+t)^-tau (0: 1/n)")
	fs.Float64Var(&ps.StepOffset, "psgld-step-offset", 0, "psgld: step offset b")
	budget := addBudgetFlags(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	prog, err := c.begin(&env, "discrete", timeMax, budget, true)
	if err != nil {
		return err
	}
	defer prog.finish()
	prog.setPhase("reading the input and fitting", 0)
	m := regression.Method(*method)
	if m == "" {
		if c.eps.inf() {
			m = regression.MethodMLE
		} else {
			m = regression.MethodNewton
		}
	}
	if m == regression.MethodMLE && !c.eps.inf() {
		fmt.Fprintln(env.Stderr, "dpsurv fit discrete: --method mle is the non-private fit; use --epsilon inf, or a private method")
		return errUsage
	}
	if m != regression.MethodMLE && c.eps.inf() {
		fmt.Fprintf(env.Stderr, "dpsurv fit discrete: --method %s needs a finite --epsilon\n", m)
		return errUsage
	}
	spec, err := c.regressionSpec(env)
	if err != nil {
		return err
	}
	cs, ss, err := parseScaling(*centre, *scale)
	if err != nil {
		return err
	}
	if !c.eps.inf() && (cs == nil || ss == nil) {
		// Centre 0 and scale 1 would clip nearly every row onto the unit
		// ball (age 62 has norm 62): a silently wrong release.
		fmt.Fprintf(env.Stderr, "dpsurv fit discrete: a private fit needs the public scaling of each covariate (%s): --centre and --scale,\n", strings.Join(spec.Covariates, ", "))
		fmt.Fprintln(env.Stderr, "  a typical value and a spread per covariate, from the protocol or the literature (never from the data),")
		fmt.Fprintln(env.Stderr, "  so that (x - centre)/scale is mostly within [-1, 1] (rows outside the unit ball are clipped onto it)")
		fmt.Fprintf(env.Stderr, "  example: %s\n", fitExample("discrete"))
		return errUsage
	}
	fromData := c.eps.inf() && cs == nil && ss == nil && !*dataScaling
	if fromData {
		*dataScaling = true // non-private: from the data, stated in the output
	}
	d, err := c.read(env, spec)
	if err != nil {
		return err
	}
	frac := *intervalFrac
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "interval-epsilon-fraction" })
	if m == regression.MethodNewton && explicit {
		fmt.Fprintln(env.Stderr, "dpsurv fit discrete: --interval-epsilon-fraction does not apply to --method newton (it releases its own Hessians; its intervals cost no extra epsilon)")
		return errUsage
	}
	if m == regression.MethodMLE || m == regression.MethodNewton || (!explicit && *link == string(regression.LinkProbit)) {
		frac = 0 // no interval release: non-private, or a link without one
	}
	opts := regression.DiscreteOptions{
		IntervalFraction: frac,
		Method:           m, Link: regression.Link(*link), Epsilon: c.eps.v, Intervals: *intervals, Knots: *knots,
		TimeMax: *timeMax, Scaling: regression.Scaling{Centre: cs, Scale: ss}, DataDerivedScaling: *dataScaling,
		Lambda: *lambda, Ridge: *ridge, Covariates: spec.Covariates, PSGLD: ps,
	}
	res, err := regression.FitDiscrete(regression.Data{Time: d.Time, Event: d.Event, X: d.Covariates}, opts, dp.NewSecureSource())
	if err != nil {
		return fmt.Errorf("fit discrete: %w", err)
	}
	out := discreteJSON{DiscreteResult: res, HorizonRule: HorizonRule}
	if c.eps.inf() {
		out.CensoredAtHorizon = &res.CensoredAtHorizon
		out.ClippedRows = &res.Clipped
		switch {
		case fromData:
			out.ScalingSource = scalingFromDataDefault
		case *dataScaling:
			out.ScalingSource = scalingFromData
		default:
			out.ScalingSource = scalingGiven
		}
		if 2*res.Clipped > len(d.Time) {
			fmt.Fprintf(env.Stderr, "dpsurv fit discrete: warning: %d of %d rows lie outside the unit ball after --centre/--scale and were clipped onto it; the coefficients are those of the clipped covariates (choose a larger --scale, or omit both for the data's own scaling)\n",
				res.Clipped, len(d.Time))
		}
	} else {
		out.CensoredAtHorizonNote = censoredAtHorizonWithheld
		out.ScalingSource = scalingGiven
	}
	if *c.plot != "" {
		if err := plotDiscrete(*c.plot, *c.input, *c.unit, res, d); err != nil {
			return err
		}
	}
	if c.eps.inf() {
		return emitFit(env.Stdout, *c.format, "discrete", out)
	}
	doc, err := jsonMap(out)
	if err != nil {
		return err
	}
	if err := budget.charge(env, *c.input, "fit discrete --method "+string(m), c.eps.v, doc); err != nil {
		return err
	}
	return emitFit(env.Stdout, *c.format, "discrete", doc)
}

// Scaling sources of a discrete fit (JSON "scaling_source").
const (
	scalingGiven           = "public: --centre/--scale"
	scalingFromData        = "data (non-private, --data-scaling): centre = mean, scale = the largest centred row norm"
	scalingFromDataDefault = "data (non-private; no --centre/--scale given): centre = mean, scale = the largest centred row norm, so no row is clipped; a private fit needs public --centre/--scale"
)

// discreteJSON is `dpsurv fit discrete`'s output: the fit plus the horizon
// rule, the scaling's source, and, on the non-private path only, the exact
// counts of rows censored at the horizon and of covariate rows clipped onto
// the unit ball (a private release withholds both: exact functions of the
// private records).
type discreteJSON struct {
	regression.DiscreteResult
	HorizonRule           string `json:"horizon_rule"`
	CensoredAtHorizon     *int   `json:"censored_at_horizon"`
	CensoredAtHorizonNote string `json:"censored_at_horizon_note,omitempty"`
	ClippedRows           *int   `json:"clipped_rows,omitempty"`
	ScalingSource         string `json:"scaling_source"`
}

func fitCox(env Env, args []string) error {
	fs := newFlags("fit cox", env)
	c := addCommonFit(fs)
	ties := fs.String("ties", "efron", "efron or breslow")
	proj := fs.String("projection", "none", "none, random or optimal (HPPCox; no formal privacy: labelled none (heuristic))")
	dims := fs.Int("dims", 0, "projected dimension m (< number of covariates) with --projection")
	siteCol := fs.String("site-col", "", "site column for the HPPCox per-site protocol")
	centre := fs.String("centre", "", "per-covariate centres, comma separated")
	scale := fs.String("scale", "", "per-covariate scales, comma separated")
	timeMax := fs.Float64("time-max", 0, "optional horizon: a time beyond it counts as censored at it (administrative censoring)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := c.check(env, "cox", nil); err != nil {
		return err
	}
	if !c.eps.inf() {
		fmt.Fprintln(env.Stderr, "dpsurv fit cox: Cox PH has no DP mechanism here; use --epsilon inf (HPPCox projections are labelled none (heuristic))")
		return errUsage
	}
	spec, err := c.regressionSpec(env)
	if err != nil {
		return err
	}
	if *siteCol != "" {
		spec.Columns.Site = *siteCol
	}
	var scaling *regression.Scaling
	if *centre != "" || *scale != "" {
		cs, ss, err := parseScaling(*centre, *scale)
		if err != nil {
			return err
		}
		scaling = &regression.Scaling{Centre: cs, Scale: ss}
	}
	d, err := c.read(env, spec)
	if err != nil {
		return err
	}
	var beyond int
	d.Time, d.Event, beyond = censorAtHorizon(d.Time, d.Event, *timeMax)
	opts := regression.CoxOptions{
		Ties: regression.Ties(*ties), Scaling: scaling, Covariates: spec.Covariates,
		Projection: regression.ProjectionOptions{Kind: regression.ProjectionKind(*proj), Dims: *dims},
	}
	res, err := regression.FitCox(regression.Data{Time: d.Time, Event: d.Event, X: d.Covariates, Site: d.Site}, opts, dp.NewSecureSource())
	if err != nil {
		return fmt.Errorf("fit cox: %w", err)
	}
	if *c.plot != "" {
		var sc []float64
		if scaling != nil {
			sc = scaling.Scale
		}
		if err := plotCox(*c.plot, *c.input, *c.unit, res, d, sc); err != nil {
			return err
		}
	}
	if *timeMax > 0 {
		return emitFit(env.Stdout, *c.format, "cox", coxJSON{CoxResult: res, TimeMax: *timeMax, HorizonRule: HorizonRule, CensoredAtHorizon: beyond})
	}
	return emitFit(env.Stdout, *c.format, "cox", res)
}

// coxJSON is `dpsurv fit cox --time-max` output: the fit, the horizon and
// the exact count censored at it (Cox is non-private here).
type coxJSON struct {
	regression.CoxResult
	TimeMax           float64 `json:"time_max"`
	HorizonRule       string  `json:"horizon_rule"`
	CensoredAtHorizon int     `json:"censored_at_horizon"`
}
