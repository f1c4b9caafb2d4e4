package cli

import (
	"flag"
	"fmt"
	"strconv"

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

func fitDiscrete(env Env, args []string) error {
	fs := newFlags("fit discrete", env)
	c := addCommonFit(fs)
	method := fs.String("method", "", "newton (noisy Newton on clipped scores: the default private method; beta, baseline and hazard-ratio limits, z and p), mle (non-private; the default with --epsilon inf), or the papers' baselines output (Ext-Out-Pert), objective (Ext-Obj-Pert), psgld")
	intervals := fs.Int("intervals", regression.DefaultIntervals, "number of discrete time intervals q")
	knots := fs.Int("knots", regression.DefaultKnots, "spline knots e")
	lambda := fs.Float64("lambda", regression.DefaultLambda, "ridge Lambda of Ext-Out-Pert / Ext-Obj-Pert")
	timeMax := fs.Float64("time-max", 0, "public time bound (required for a private fit; 0 with mle means the largest time)")
	link := fs.String("link", "logit", "logit, cloglog or probit (cloglog/probit: newton, mle and psgld only; with cloglog exp(beta) is the grouped-time hazard ratio)")
	centre := fs.String("centre", "", "public per-covariate centres, comma separated (default 0)")
	scale := fs.String("scale", "", "public per-covariate scales, comma separated (default 1)")
	dataScaling := fs.Bool("data-scaling", false, "non-private only: the paper's data-derived normalisation")
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
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.check(env, "discrete", timeMax); err != nil {
		return err
	}
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
	spec, err := c.spec()
	if err != nil {
		return err
	}
	if len(spec.Covariates) == 0 {
		fmt.Fprintln(env.Stderr, "dpsurv fit discrete: --covariates is required")
		return errUsage
	}
	cs, err := parseFloats("--centre", *centre)
	if err != nil {
		return err
	}
	ss, err := parseFloats("--scale", *scale)
	if err != nil {
		return err
	}
	d, err := readFitFile(*c.input, spec)
	if err != nil {
		return err
	}
	reportDead(env.Stderr, d)
	frac := *intervalFrac
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "interval-epsilon-fraction" })
	if m == regression.MethodNewton && explicit {
		fmt.Fprintln(env.Stderr, "dpsurv fit discrete: --interval-epsilon-fraction does not apply to --method newton (it releases its own Hessians; its intervals cost no extra epsilon)")
		return errUsage
	}
	if m == regression.MethodMLE || m == regression.MethodNewton || (!explicit && *link != string(regression.LinkLogit)) {
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
	return printJSON(env.Stdout, res)
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
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.check(env, "cox", nil); err != nil {
		return err
	}
	if !c.eps.inf() {
		fmt.Fprintln(env.Stderr, "dpsurv fit cox: Cox PH has no DP mechanism here; use --epsilon inf (HPPCox projections are labelled none (heuristic))")
		return errUsage
	}
	spec, err := c.spec()
	if err != nil {
		return err
	}
	if len(spec.Covariates) == 0 {
		fmt.Fprintln(env.Stderr, "dpsurv fit cox: --covariates is required")
		return errUsage
	}
	if *siteCol != "" {
		spec.Columns.Site = *siteCol
	}
	var scaling *regression.Scaling
	if *centre != "" || *scale != "" {
		cs, err := parseFloats("--centre", *centre)
		if err != nil {
			return err
		}
		ss, err := parseFloats("--scale", *scale)
		if err != nil {
			return err
		}
		scaling = &regression.Scaling{Centre: cs, Scale: ss}
	}
	d, err := readFitFile(*c.input, spec)
	if err != nil {
		return err
	}
	reportDead(env.Stderr, d)
	opts := regression.CoxOptions{
		Ties: regression.Ties(*ties), Scaling: scaling, Covariates: spec.Covariates,
		Projection: regression.ProjectionOptions{Kind: regression.ProjectionKind(*proj), Dims: *dims},
	}
	res, err := regression.FitCox(regression.Data{Time: d.Time, Event: d.Event, X: d.Covariates, Site: d.Site}, opts, dp.NewSecureSource())
	if err != nil {
		return fmt.Errorf("fit cox: %w", err)
	}
	return printJSON(env.Stdout, res)
}
