package aggregators

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/regression"
)

// KindDiscrete is the discrete-time survival regression (mechanisms.md
// section 5, paper 000): one DP fit per window on the window's records.
const KindDiscrete = "discrete"

// Discrete aggregate defaults and limits.
const (
	// DefaultMaxRecords is the default public cap on the records one
	// discrete window keeps.
	DefaultMaxRecords = 200_000
	// MaxMaxRecords bounds params.max_records (memory).
	MaxMaxRecords = 10_000_000
	// MaxDiscreteIntervals bounds params.intervals (as regression does).
	MaxDiscreteIntervals = 100_000
	// MaxDiscreteKnots bounds params.knots.
	MaxDiscreteKnots = 50
)

// Reasons a discrete aggregate does not include a record (metric labels,
// besides those of every aggregate).
const (
	// SkipWindowCap: the window already holds max_records records.
	SkipWindowCap = "window_cap"
	// SkipInvalidCovariate: a covariate is not finite (the validator
	// dead-letters such rows, so this should stay 0).
	SkipInvalidCovariate = "invalid_covariate"
)

// DiscreteCohort is the cohort field (and last key component) of a
// discrete release, which pools every cohort.
const DiscreteCohort = "all"

// NeighbouringDiscrete is the neighbouring relation of a discrete release.
const NeighbouringDiscrete = "replace-one among the window's included records (bounded DP): the sensitivities are functions of their number n, so n (at most max_records) is public and released exactly; whether a patient is in the window is not protected beyond what n reveals"

const compositionDiscrete = "one fit pooling the records of every cohort in the window (each record is in one window); sequential across windows: each window is charged epsilon to stream, aggregate and every cohort scope"

// DiscreteParams are the params of a discrete aggregate (the YAML keys in
// the tags).
type DiscreteParams struct {
	// Method is newton (default), output, objective or psgld.
	Method string `yaml:"method"`
	// Covariates are the input covariates of the model (each one of
	// schema.covariates), in the order of beta.
	Covariates []string `yaml:"covariates"`
	// Centre and Scale are the public per-covariate centre and scale
	// (required, one per covariate): x -> (x - centre) / scale, then
	// projection onto the unit ball.
	Centre []float64 `yaml:"centre"`
	Scale  []float64 `yaml:"scale"`
	// Intervals q (default 200) and Knots e (default 3) of the model.
	Intervals int `yaml:"intervals"`
	Knots     int `yaml:"knots"`
	// Lambda is the ridge of output and objective perturbation (default
	// regression.DefaultLambda).
	Lambda float64 `yaml:"lambda"`
	// Link: logit (default) or cloglog with every method (output,
	// objective and psgld fit cloglog through its bounded-influence loss:
	// regression/cloglog_huber.go); probit with methods newton and psgld
	// only.
	Link string `yaml:"link"`
	// TimeMax is the public end of the model's time domain (default
	// schema.time_max).
	TimeMax float64 `yaml:"time_max"`
	// MaxRecords is the public cap on the records a window keeps (default
	// DefaultMaxRecords); later records of the window are counted in
	// dpsurv_aggregator_records_skipped_total{reason="window_cap"}.
	MaxRecords int `yaml:"max_records"`
	// Steps is the pSGLD chain length (0: regression's default).
	Steps int `yaml:"steps"`
	// IntervalEpsilonFraction is the share of epsilon spent on the
	// interval release of methods output and objective
	// (regression.DiscreteOptions.IntervalFraction: noisy Hessians from
	// which the coefficients' honest intervals are computed); in (0, 0.5],
	// default regression.DefaultIntervalFraction with the logit link. It
	// does not apply to method newton (the default), which releases its
	// own Hessians and spends the whole epsilon on its steps, nor to psgld
	// (whose limits under-covered and are withheld), nor to other links:
	// leave it unset there.
	IntervalEpsilonFraction float64 `yaml:"interval_epsilon_fraction"`
}

func (p DiscreteParams) flat() flatParams {
	return flatParams{Method: p.Method, Covariates: p.Covariates, Centre: p.Centre, Scale: p.Scale, Intervals: p.Intervals,
		Knots: p.Knots, Lambda: p.Lambda, Link: p.Link, TimeMax: p.TimeMax, MaxRecords: p.MaxRecords, Steps: p.Steps,
		IntervalEpsilonFraction: p.IntervalEpsilonFraction}
}

// params reads the discrete keys (DiscreteParams).
func (discreteKind) params(d *paramDecoder) Params {
	var p DiscreteParams
	d.str("method", &p.Method)
	d.names("covariates", &p.Covariates)
	d.floats("centre", &p.Centre)
	d.floats("scale", &p.Scale)
	d.int("intervals", &p.Intervals, defaultIntLimit, "")
	d.int("knots", &p.Knots, defaultIntLimit, "")
	d.float("lambda", &p.Lambda)
	d.str("link", &p.Link)
	d.float("time_max", &p.TimeMax)
	d.int("max_records", &p.MaxRecords, defaultIntLimit, "")
	d.int("steps", &p.Steps, defaultIntLimit, "")
	// an explicit 0 would otherwise be the zero value, i.e. the default:
	// with the logit link the service releases intervals on every window,
	// so 0 is refused rather than silently read as 0.5
	zero := d.float("interval_epsilon_fraction", &p.IntervalEpsilonFraction)
	perturbation := p.Method == string(regression.MethodOutput) || p.Method == string(regression.MethodObjective)
	if zero && (p.Link == "" || p.Link == string(regression.LinkLogit) || (p.Link == string(regression.LinkCloglog) && perturbation)) && p.Method != string(regression.MethodPSGLD) {
		d.late = append(d.late, fieldErr("params.interval_epsilon_fraction", ErrInvalid,
			"must be in (0, 0.5] with the logit link and with output or objective (leave it out for the default %v)", regression.DefaultIntervalFraction))
	}
	return p
}

// defaults fills the defaults of a discrete aggregate's params.
func (discreteKind) defaults(c *Config) {
	p := paramsOf[DiscreteParams](*c)
	if p.Method == "" {
		p.Method = string(regression.MethodNewton)
	}
	if p.Link == "" {
		p.Link = string(regression.LinkLogit)
	}
	if p.Intervals == 0 {
		p.Intervals = regression.DefaultIntervals
	}
	if p.Knots == 0 {
		p.Knots = regression.DefaultKnots
	}
	if p.Lambda == 0 {
		p.Lambda = regression.DefaultLambda
	}
	if p.TimeMax == 0 {
		p.TimeMax = c.TimeMax
	}
	if p.MaxRecords == 0 {
		p.MaxRecords = DefaultMaxRecords
	}
	if p.IntervalEpsilonFraction == 0 && (p.Link == string(regression.LinkLogit) || p.Link == string(regression.LinkCloglog)) && (p.Method == string(regression.MethodOutput) || p.Method == string(regression.MethodObjective)) {
		p.IntervalEpsilonFraction = regression.DefaultIntervalFraction
	}
	c.Params = p
}

// scalingExample is the worked example of the discrete scaling errors (the
// CLI's `fit discrete` refusal shows the same values).
const scalingExample = "e.g. for age and ph.ecog on lung: centre: [62, 1], scale: [40, 4]"

// scalingTemplate is a placeholder list naming each covariate, such as
// [<typical age>, <typical ph.ecog>].
func scalingTemplate(what string, covs []string) string {
	if len(covs) == 0 {
		return "[...]"
	}
	parts := make([]string, len(covs))
	for i, c := range covs {
		parts[i] = "<" + what + " " + c + ">"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// check validates a discrete aggregate (after defaults).
func (discreteKind) check(c Config) []error {
	var errs []error
	add := func(path string, sentinel error, format string, a ...any) {
		errs = append(errs, fieldErr(path, sentinel, format, a...))
	}
	p := paramsOf[DiscreteParams](c)
	schema := map[string]bool{}
	for _, s := range c.Covariates {
		schema[s] = true
	}
	d := len(p.Covariates)
	if d == 0 {
		add("params.covariates", ErrRequired, "required (the model's covariates, each one of schema.covariates)")
	}
	seen := map[string]bool{}
	for i, s := range p.Covariates {
		switch {
		case !schema[s]:
			add(fmt.Sprintf("params.covariates[%d]", i), ErrInvalid, "%q is not in schema.covariates", s)
		case seen[s]:
			add(fmt.Sprintf("params.covariates[%d]", i), ErrInvalid, "%q repeats", s)
		}
		seen[s] = true
	}
	scaling := func(name string, vals []float64, required string, ok func(float64) bool, bad string) {
		switch {
		case vals == nil:
			add("params."+name, ErrRequired, "%s", required)
		case len(vals) != d:
			add("params."+name, ErrInvalid, "%d values for %d covariates", len(vals), d)
		}
		for i, v := range vals {
			if !ok(v) {
				add(fmt.Sprintf("params.%s[%d]", name, i), ErrInvalid, "%s", bad)
			}
		}
	}
	scaling("centre", p.Centre, fmt.Sprintf("required (the public centre of each covariate, in params.covariates order: centre: %s; never derived from the data; %s)",
		scalingTemplate("typical", p.Covariates), scalingExample),
		func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }, "must be finite")
	scaling("scale", p.Scale, fmt.Sprintf("required (the public scale of each covariate, in params.covariates order: scale: %s, so that (x - centre)/scale is mostly within [-1, 1]; never derived from the data; %s)",
		scalingTemplate("spread of", p.Covariates), scalingExample),
		func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }, "must be positive and finite")
	m := regression.Method(p.Method)
	switch m {
	case regression.MethodNewton, regression.MethodOutput, regression.MethodObjective, regression.MethodPSGLD:
	case regression.MethodMLE:
		add("params.method", ErrInvalid, "mle is the non-private fit; a streaming aggregate needs newton (the default), output, objective or psgld")
	default:
		add("params.method", ErrInvalid, "%q is not newton, output, objective or psgld", p.Method)
	}
	switch regression.Link(p.Link) {
	case regression.LinkLogit, regression.LinkCloglog:
	case regression.LinkProbit:
		if m != regression.MethodPSGLD && m != regression.MethodNewton {
			add("params.link", ErrInvalid, "%s is available with methods newton and psgld only (output and objective are proved for logit and cloglog)", p.Link)
		}
	default:
		add("params.link", ErrInvalid, "%q is not logit, cloglog or probit", p.Link)
	}
	if p.Intervals < 1 || p.Intervals > MaxDiscreteIntervals {
		add("params.intervals", ErrInvalid, "must be in [1, %d], got %d", MaxDiscreteIntervals, p.Intervals)
	}
	if p.Knots < 2 || p.Knots > MaxDiscreteKnots {
		add("params.knots", ErrInvalid, "must be in [2, %d], got %d", MaxDiscreteKnots, p.Knots)
	}
	if !(p.Lambda > 0) || math.IsInf(p.Lambda, 0) {
		add("params.lambda", ErrInvalid, "must be positive and finite, got %v", p.Lambda)
	}
	if !(p.TimeMax > 0) || math.IsInf(p.TimeMax, 0) {
		add("params.time_max", ErrInvalid, "must be a positive public bound, got %v", p.TimeMax)
	}
	if p.MaxRecords < 1 || p.MaxRecords > MaxMaxRecords {
		add("params.max_records", ErrInvalid, "must be in [1, %d], got %d", MaxMaxRecords, p.MaxRecords)
	}
	switch {
	case p.Steps < 0:
		add("params.steps", ErrInvalid, "must be >= 0, got %d", p.Steps)
	case p.Steps > 0 && m != regression.MethodPSGLD:
		add("params.steps", ErrInvalid, "only for method psgld")
	}
	switch f := p.IntervalEpsilonFraction; {
	case f != 0 && m == regression.MethodNewton:
		add("params.interval_epsilon_fraction", ErrInvalid, "does not apply to method newton: it releases its own Hessians and its intervals cost no extra epsilon; leave it out")
	case m == regression.MethodNewton:
	case f != 0 && p.Link == string(regression.LinkProbit):
		add("params.interval_epsilon_fraction", ErrInvalid, "the interval release is bounded for the logit and cloglog links only")
	case f != 0 && m == regression.MethodPSGLD:
		add("params.interval_epsilon_fraction", ErrInvalid, "psgld releases publish no limits (they under-covered: docs/inference.md), so no epsilon is spent on an interval release; leave it out")
	case m == regression.MethodPSGLD:
	case (p.Link == string(regression.LinkLogit) || p.Link == string(regression.LinkCloglog)) && !(f > 0 && f <= 0.5):
		add("params.interval_epsilon_fraction", ErrInvalid, "must be in (0, 0.5], got %v", f)
	}
	return errs
}

// add keeps the rows of a canonical record in their windows'
// record state (up to max_records per window).
func (discreteKind) add(a *aggregate, rec arrow.Record, now int64) (AddStats, error) {
	var st AddStats
	p := paramsOf[DiscreteParams](a.cfg)
	cols := make([]*array.Float64, len(p.Covariates))
	for j, name := range p.Covariates {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return st, fmt.Errorf("record lacks covariate column %q", name)
		}
		c, ok := rec.Column(idx[0]).(*array.Float64)
		if !ok {
			return st, fmt.Errorf("covariate column %q is not float64", name)
		}
		cols[j] = c
	}
	r, ok, err := a.rowsOf(rec, now, &st)
	if !ok {
		return st, err
	}
	x := make([]float32, len(cols))
	z := make([]float64, len(cols))
rows:
	for i := range r.n {
		s := r.window(a, i)
		w, _ := a.open[s].(*discreteWindow)
		if w == nil {
			a.notOpen(&st, s, now)
			continue
		}
		fp, err := a.fingerprint(r.ids.Value(i))
		if err != nil {
			return st, fmt.Errorf("row %d: %w", i, err)
		}
		tbl := a.patients[s]
		if tbl == nil {
			tbl = patientTable{}
			a.patients[s] = tbl
		}
		idx, known := tbl[fp]
		if !known && w.len() >= p.MaxRecords {
			st.skip(SkipWindowCap, 1)
			continue
		}
		var ss float64
		for j, c := range cols {
			if !c.IsValid(i) {
				st.skip(SkipInvalidCovariate, 1)
				continue rows
			}
			v := (c.Value(i) - p.Centre[j]) / p.Scale[j]
			z[j] = v
			ss += v * v
		}
		if math.IsNaN(ss) || math.IsInf(ss, 0) {
			st.skip(SkipInvalidCovariate, 1)
			continue
		}
		div := 1.0
		if nrm := math.Sqrt(ss); nrm > 1 {
			div = nrm
			st.Clamped++
		}
		for j := range z {
			x[j] = float32(z[j] / div)
		}
		iv, beyond := discreteInterval(r.times.Value(i), p.TimeMax, p.Intervals)
		ev := r.events.Value(i) && !beyond
		if beyond {
			st.CensoredAtHorizon++
		}
		if known {
			// One patient, one record per window: the latest version
			// replaces the one kept.
			w.set(int(idx), iv, ev, x)
			st.Replaced++
			continue
		}
		tbl[fp] = uint64(w.len())
		w.push(iv, ev, x, p.MaxRecords)
		st.Counted++
	}
	return st, nil
}

// release draws the window's fit: FitDiscrete on the included
// records with the configured method, or, with fewer than two records
// (where the mechanisms are undefined), the fallback release (zero plus
// output-perturbation noise at n = 1, a draw that does not depend on the
// data). n is public (replace-one) and released exactly either way. A fit
// that fails numerically is released as FitDiscrete's fallback; it is
// never retried with fresh noise.
func (k discreteKind) release(a *aggregate, c *closing, src dp.Source, remaining map[string]float64) ([]FitMessage, error) {
	p := paramsOf[DiscreteParams](a.cfg)
	opts := regression.DiscreteOptions{
		Method: regression.Method(p.Method), Link: regression.Link(p.Link), Epsilon: a.cfg.Epsilon,
		Intervals: p.Intervals, Knots: p.Knots, TimeMax: p.TimeMax, Lambda: p.Lambda,
		Covariates: p.Covariates, PSGLD: regression.PSGLDOptions{Steps: p.Steps},
		IntervalFraction: p.IntervalEpsilonFraction,
	}
	w, _ := c.w.(*discreteWindow)
	if w == nil {
		w = &discreteWindow{d: len(p.Covariates)}
	}
	var res regression.DiscreteResult
	var err error
	if w.len() >= 2 {
		res, err = regression.FitDiscrete(w.data(p.Intervals, p.TimeMax), opts, src)
	} else {
		res, err = k.noFit(a.cfg, w.len(), src)
	}
	if err != nil {
		return nil, fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
	}
	m := a.header(c.start, 0, remaining, a.cfg.Epsilon)
	m.Cohort = DiscreteCohort
	m.Key = MessageKey(a.cfg.Name, m.WindowStartUnix, DiscreteCohort)
	m.TimeMax = p.TimeMax
	m.Method, m.Guarantee = string(res.Method), res.Guarantee
	m.Mechanism = discreteMechanism(res.Method)
	m.Neighbouring, m.Composition = NeighbouringDiscrete, compositionDiscrete
	m.Public = append(regression.PublicDiscrete(res.Method), "max_records", "interval_epsilon_fraction")
	if res.Hessians != nil {
		m.Public = append(m.Public, "hessians.noise", "hessians.epsilon")
	}
	m.N = F(res.N)
	df := &DiscreteFields{
		Alpha: fs(res.Alpha), Beta: fs(res.Beta), Covariates: p.Covariates, Link: p.Link,
		EpsilonFit: res.EpsilonFit, EpsilonInterval: res.EpsilonInterval, Intervals: p.Intervals, Knots: p.Knots,
		Scaling: regression.Scaling{Centre: p.Centre, Scale: p.Scale}, MaxRecords: p.MaxRecords,
		Fallback: res.Fallback, Noise: res.Noise, Delta: res.Delta, EpsilonPrime: res.EpsilonPrime, PSGLD: res.PSGLD,
		IntervalEpsilonFraction: p.IntervalEpsilonFraction, Hessians: res.Hessians,
		Newton: res.Newton, NewtonStart: res.NewtonStart, NewtonSteps: res.NewtonSteps,
	}
	if res.Method != regression.MethodPSGLD && res.Method != regression.MethodNewton {
		df.Lambda = p.Lambda
	}
	discreteIntervals(df, res)
	res.Covariates = p.Covariates
	m.LowInformation, m.LowInformationReason = regression.AssessInformation(res)
	m.DiscreteFields = df
	return []FitMessage{m}, nil
}

// noFit is the release of a window with fewer than two records:
// alpha and beta are the zero vector plus Ext-Out-Pert noise at n = 1 (a
// draw that does not depend on the data), n exact (public), fallback true.
func (discreteKind) noFit(c Config, n int, src dp.Source) (regression.DiscreteResult, error) {
	p := paramsOf[DiscreteParams](c)
	basis, err := regression.SplineBasis(p.Intervals, p.Knots)
	if err != nil {
		return regression.DiscreteResult{}, err
	}
	link := regression.Link(p.Link)
	if link == regression.LinkProbit {
		link = regression.LinkLogit // data-independent noise: any calibration will do
	}
	t, err := regression.OutputSensitivityFor(basis, 1, p.Lambda, link)
	if err != nil {
		return regression.DiscreteResult{}, err
	}
	noise, err := regression.OutputNoise(t+2*regression.CertificateTolerance/p.Lambda, p.Knots+len(p.Covariates), c.Epsilon*(1-p.IntervalEpsilonFraction))
	if err != nil {
		return regression.DiscreteResult{}, err
	}
	f, err := noise.Draw(src, p.Knots+len(p.Covariates))
	if err != nil {
		return regression.DiscreteResult{}, err
	}
	g := regression.GuaranteePureDPCertified // the method's label (this fallback is a function of the public n)
	switch regression.Method(p.Method) {
	case regression.MethodPSGLD:
		g = regression.GuaranteeMCMC // the method's label, whatever the draw
	case regression.MethodObjective:
		g = regression.GuaranteeObjective
	case regression.MethodNewton:
		g = regression.GuaranteePureDP
	}
	// the budget split of a fit (the fallback's coefficients get the fit's
	// share; the interval share is unspent: nothing to estimate)
	epsFit := c.Epsilon * (1 - p.IntervalEpsilonFraction)
	return regression.DiscreteResult{Method: regression.Method(p.Method), Guarantee: g,
		EpsilonFit: epsFit, EpsilonInterval: c.Epsilon - epsFit, N: int64(n), Fallback: true, Noise: &noise, NoiseScale: noise.Scale,
		Alpha: f[:p.Knots], Beta: f[p.Knots:]}, nil
}

// discreteIntervalRelease describes the interval release in a discrete
// release's mechanism.
const discreteIntervalRelease = "; with epsilon_interval > 0: three mean loss Hessians at points computed from the release " +
	"(hessians[].at), each rounded to hessians[].noise.grid plus per-entry discrete Laplace noise of scale hessians[].noise.scale " +
	"(replace-one L1 sensitivity at a fixed point), budgets epsilon_interval x 1/8, 1/8, 3/4; the coefficient intervals are post-processing" +
	discreteCloglogLoss

// discreteCloglogLoss states the loss and the constants of a private
// cloglog fit other than newton (regression/cloglog_huber.go).
const discreteCloglogLoss = "; link cloglog: the fit minimises the bounded-influence cloglog loss (a survived period's exp(z) continued beyond the public knee z0 = 0 by 2t + exp(-t), t = z - z0; " +
	"the event term unchanged), whose period derivatives lie in (-1, 2) and second derivatives in (0, 1], so GradientBound = sum_s sqrt(9 ||A_s||^2 + 16) " +
	"(logit: Lemma 4.2's), the Jacobian term 2 sum_s ln(1 + (||A_s||^2 + 1)/(n (lambda + delta))) (logit: over 4 n (lambda + delta)) and the Hessian sensitivity 4 times the logit one"

func discreteMechanism(m regression.Method) string {
	switch m {
	case regression.MethodNewton:
		return "noisy Newton (after Avella-Medina, Bradshaw & Loh 2023): from a start computed from released event and person-period counts (newton_start), " +
			"newton.steps steps each releasing, at a point computed from earlier releases (newton_steps[].at), the sums over records of the score and Hessian by blocks " +
			"(alpha and beta scores, alpha-alpha, alpha-beta, beta-beta Hessian blocks), every record's block clipped to its public norm (newton.*_clip), " +
			"each rounded to its noise.grid plus per-coordinate discrete Laplace noise of scale noise.scale = (sqrt(dim) 2 clip + dim grid)/epsilon_block (replace-one); " +
			"the blocks' epsilons sum to epsilon (epsilon_interval 0); the coefficients, Wald intervals, z, p and hazard ratios are post-processing; n is public"
	case regression.MethodOutput:
		return "Ext-Out-Pert (paper 000, Algorithm 1): minimiser of the mean loss plus (lambda/2)||f||^2 (certified within 1e-9/lambda), rounded to the grid noise.grid, plus per-coordinate discrete Laplace noise of scale noise.scale = (sqrt(d) t' + d grid)/epsilon_fit, t' = GradientBound/(n lambda) + 2e-9/lambda; n is public" + discreteIntervalRelease
	case regression.MethodObjective:
		return "Ext-Obj-Pert (paper 000, Algorithm 2): minimiser of the mean loss plus (lambda/2)||f||^2 plus a random linear term <b, f>/n (and extra ridge delta where the Jacobian needs it), b per-coordinate discrete Laplace on the grid noise.grid with scale noise.scale = sqrt(d) GradientBound/epsilon_prime (from epsilon_fit); proved for continuous b only (see guarantee); n is public" + discreteIntervalRelease
	case regression.MethodPSGLD:
		return "Sanitized-EXP (paper 000, Algorithms 3-4): one sample from exp(epsilon_fit U(f) / (2v)) drawn by pSGLD, exact only if the sampling were exact; n is public" + discreteIntervalRelease
	}
	return string(m)
}

// DiscreteFields are the coefficients of a discrete release (interfaces.md
// names): hazard g(h(s | x)) = alpha'A_s + beta'x with the natural-spline
// baseline A_s of intervals and knots, x the covariates centred and scaled
// by scaling and projected onto the unit ball. n is public (see
// NeighbouringDiscrete), so the mechanism parameters, all functions of n
// and the configuration, are published: the lattice noise, Ext-Obj-Pert's
// delta and epsilon', pSGLD's settings.
type DiscreteFields struct {
	Alpha      []F      `json:"alpha"`
	Beta       []F      `json:"beta"`
	Covariates []string `json:"covariates"`
	Link       string   `json:"link"`
	EpsilonFit float64  `json:"epsilon_fit"`
	// EpsilonInterval is the budget of the interval release (the noisy
	// Hessians); epsilon_fit + epsilon_interval = epsilon. A fallback
	// leaves it unspent (still charged).
	EpsilonInterval         float64                     `json:"epsilon_interval"`
	IntervalEpsilonFraction float64                     `json:"interval_epsilon_fraction"`
	Hessians                []regression.HessianRelease `json:"hessians,omitempty"`
	Intervals               int                         `json:"intervals"`
	Knots                   int                         `json:"knots"`
	Lambda                  float64                     `json:"lambda,omitempty"`
	Scaling                 regression.Scaling          `json:"scaling"`
	MaxRecords              int                         `json:"max_records"`
	Fallback                bool                        `json:"fallback"`
	Noise                   *regression.LatticeNoise    `json:"noise,omitempty"`
	Delta                   float64                     `json:"delta,omitempty"`
	EpsilonPrime            float64                     `json:"epsilon_prime,omitempty"`
	PSGLD                   *regression.PSGLDOptions    `json:"psgld,omitempty"`
	// 95% intervals of the TRUE coefficients (regression.
	// CoefficientIntervals: sampling error, ridge bias and the noise),
	// around the de-biased estimate alpha_debiased/beta_debiased;
	// absent without an interval release (a fallback); alpha_lower and
	// alpha_upper are withheld in every release (the reason in
	// coefficient_interval_method), alpha_debiased for psgld; coefficient_
	// interval_method says how they were computed (not interval_method:
	// the fit message embeds the weibull fields too, and encoding/json
	// drops a name two embedded structs share).
	// Method newton: its settings, released start counts and steps, the
	// standard errors, z statistics and two-sided p-values of beta, and
	// exp(beta) with its limits (hazard ratios with the cloglog link,
	// odds ratios with logit).
	Newton      *regression.NewtonOptions `json:"newton,omitempty"`
	NewtonStart []regression.NewtonBlock  `json:"newton_start,omitempty"`
	NewtonSteps []regression.NewtonStep   `json:"newton_steps,omitempty"`
	// (alpha_se ... hazard_ratio_upper: regression.WaldSummary; alpha_
	// debiased ... noise_only_beta_upper: regression.CoefficientLimits,
	// whose noise-only 95% limits, of Ext-Out-Pert and fallbacks, are
	// released ± the noise quantile: they cover the ridge minimiser on
	// the window's records, NOT the true coefficients, kept for
	// comparison.)
	regression.WaldSummary
	regression.CoefficientLimits
}

// discreteKind is the discrete-time survival regression: one DP fit per
// window pooling every cohort (replace-one, n public and released exactly).
type discreteKind struct{}

func (discreteKind) exactCount(Config) bool { return true }

// plan: a window's fit (a pSGLD window can take a minute) may run on its
// own goroutine.
func (discreteKind) plan(a *aggregate) plan {
	p := windowPlan(a)
	p.async = true
	return p
}
func (discreteKind) open(a *aggregate) window {
	return &discreteWindow{d: len(paramsOf[DiscreteParams](a.cfg).Covariates)}
}
func (discreteKind) restore(a *aggregate, _, records []byte) (window, error) {
	p := paramsOf[DiscreteParams](a.cfg)
	return decodeDiscrete(records, len(p.Covariates), p.Intervals, p.MaxRecords)
}
