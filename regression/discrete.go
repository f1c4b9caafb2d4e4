package regression

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// Method selects how FitDiscrete fits the discrete-time model.
type Method string

// Methods of FitDiscrete.
const (
	MethodMLE       Method = "mle"       // non-private maximum likelihood
	MethodOutput    Method = "output"    // Ext-Out-Pert (Algorithm 1), pure DP
	MethodObjective Method = "objective" // Ext-Obj-Pert (Algorithm 2), pure DP
	MethodPSGLD     Method = "psgld"     // Sanitized-EXP sampled by pSGLD (Algorithms 3–4), approximate
)

// Defaults of DiscreteOptions (mechanisms.md section 5 and paper 000).
const (
	DefaultIntervals    = 200
	DefaultKnots        = 3
	DefaultLambda       = 0.1 // Ext-Out/Obj-Pert ridge; the paper's Table 2 best is 1e-2..1e-1
	DefaultMinibatch    = 200
	DefaultTau          = 0.51
	DefaultPSGLDLambda  = 1e-5
	DefaultMu           = 0.99
	DefaultEpochs       = 250
	DefaultSigmaFactor  = 1e-2 // sigma = 1e-2 * 2v/epsilon
	DefaultStepConstant = 1.0  // step scale = DefaultStepConstant / n
	DefaultMinSteps     = 10000
)

// PSGLDOptions are the Sanitized-EXP and sampler settings. Zero values take
// the defaults of mechanisms.md section 5.
type PSGLDOptions struct {
	// V bounds the sanitized loss, C_v(x) = v tanh(x/v); 0 means 2 ln n.
	V float64 `json:"v"`
	// Sigma is the Gaussian prior's precision; 0 means 1e-2 * 2v/epsilon.
	Sigma float64 `json:"sigma"`
	// Minibatch is k, records per step (without replacement); 0 means 200.
	Minibatch int `json:"minibatch"`
	// Steps is the chain length T. 0 means max(Epochs * n/Minibatch,
	// DefaultMinSteps), an epoch being one pass over the data in
	// minibatches. (The paper calls a bundle of n steps an epoch; pass
	// Steps = 250 n for that.) With the default step scale 1/n the mixing
	// per step does not depend on n, hence the floor for small data sets.
	Steps int `json:"steps"`
	// Epochs sets Steps when Steps is 0; 0 means 250.
	Epochs float64 `json:"epochs"`
	// Tau, Lambda, Mu as in Algorithm 4; 0 means 0.51, 1e-5, 0.99.
	Tau    float64 `json:"tau"`
	Lambda float64 `json:"lambda"`
	Mu     float64 `json:"mu"`
	// StepScale a and StepOffset b give the step size a (b + t)^-tau. The
	// paper's t^-tau (a = 1) diverges on real data: the preconditioned drift
	// of one step is about a n. 0 means a = 1/n, which makes a step move
	// f by O(1) at first and the chain mix on the posterior's scale.
	StepScale  float64 `json:"step_scale"`
	StepOffset float64 `json:"step_offset"`
}

// DiscreteOptions configures FitDiscrete.
type DiscreteOptions struct {
	Method Method
	// Link defaults to logit; Ext-Out/Obj-Pert accept logit and cloglog
	// (with cloglog they, and pSGLD, minimise the bounded-influence
	// cloglog loss: cloglog_huber.go)
	Link Link
	// Epsilon is the budget of the release. Ignored by MethodMLE. The
	// record count n is public (replace-one: the sensitivities are
	// functions of it) and released exactly; no budget is spent on it.
	Epsilon   float64
	Intervals int // q; 0 means 200
	Knots     int // e; 0 means 3
	// TimeMax is the public end of the time domain [0, TimeMax]; a time
	// beyond it is administratively censored at TimeMax (last interval, no
	// event), a negative time clamped to 0. 0 is allowed for MethodMLE only and then means
	// the largest observed time.
	TimeMax float64
	// Scaling is the public per-covariate centre and scale (nil: 0 and 1);
	// rows are then clipped to the unit ball.
	Scaling Scaling
	// DataDerivedScaling replaces Scaling by the paper's normalisation
	// (zero mean, divide by the largest row norm). MethodMLE only.
	DataDerivedScaling bool
	// Lambda is the ridge of Ext-Out-Pert and Ext-Obj-Pert; 0 means 0.1.
	// MethodMLE ignores it unless Ridge is set.
	Lambda float64
	// Ridge fits the MLE with the penalty (Lambda/2)||f||^2 on the mean
	// loss (the J of Algorithm 1), e.g. to see the regularisation bias.
	Ridge bool
	PSGLD PSGLDOptions
	// Newton configures MethodNewton.
	Newton NewtonOptions
	// Covariates names the columns of X, copied into the result.
	Covariates []string
	// MaxIter bounds Newton iterations; 0 means 100.
	MaxIter int
	// IntervalFraction is the share of Epsilon spent on the interval
	// release (hessian.go): the noisy mean Hessian at the released
	// coefficients, from which the coefficient intervals are computed
	// (inference.go). The coefficients get (1 - IntervalFraction) Epsilon.
	// 0 (the zero value) releases no Hessian: the coefficients get the
	// whole budget and carry only the labelled noise-only limits
	// (Ext-Out-Pert) or none. Must be in [0, 0.5]; logit or cloglog. The
	// aggregator and the CLI default to DefaultIntervalFraction.
	IntervalFraction float64
	noGroups         bool // internal tests: the MLE record by record (groups)
}

// DefaultIntervalFraction is the share of a release's epsilon that the
// aggregator and the CLI spend on the interval release by default.
const DefaultIntervalFraction = 0.5

// DiscreteResult is a discrete-time fit. JSON names follow interfaces.md.
type DiscreteResult struct {
	Method  Method  `json:"method"`
	Link    Link    `json:"link"`
	Epsilon Epsilon `json:"epsilon"`
	// EpsilonFit is the budget of the coefficients and EpsilonInterval
	// that of the Hessian release (IntervalFraction); they sum to Epsilon.
	EpsilonFit      float64 `json:"epsilon_fit,omitempty"`
	EpsilonInterval float64 `json:"epsilon_interval"`
	Guarantee       string  `json:"guarantee"`
	Neighbouring    string  `json:"neighbouring"`
	// Public lists what a private release treats as public (not protected
	// by its guarantee): the record count n and the configuration. Every
	// published field is a function of these and of the noisy estimate.
	Public []string `json:"public,omitempty"`
	// N is the record count: public for a private release (replace-one),
	// so exact.
	N          int64     `json:"n"`
	NNoisy     bool      `json:"n_noisy"`
	Alpha      []float64 `json:"alpha"`
	Beta       []float64 `json:"beta"`
	Covariates []string  `json:"covariates,omitempty"`
	// LogLik is the log-likelihood at the estimate, reported only on the
	// non-private path (at a private estimate it would be a further,
	// unaccounted release about the data).
	LogLik    *float64 `json:"loglik,omitempty"`
	Intervals int      `json:"intervals"`
	Knots     int      `json:"knots"`
	TimeMax   float64  `json:"time_max"`
	Scaling   Scaling  `json:"scaling"`
	Lambda    float64  `json:"lambda,omitempty"`
	// Ext-Obj-Pert: extra ridge Delta and the budget epsilon' left for b.
	Delta        float64 `json:"delta,omitempty"`
	EpsilonPrime float64 `json:"epsilon_prime,omitempty"`
	// NoiseScale is Noise.Scale (kept for readers of the old field).
	NoiseScale float64 `json:"noise_scale,omitempty"`
	// Noise is the per-coordinate lattice noise: of the released
	// coefficients (Ext-Out-Pert, and every fallback) or of b
	// (Ext-Obj-Pert). Nil for pSGLD and the MLE.
	Noise *LatticeNoise `json:"noise,omitempty"`
	// Fallback is true when the fit could not be computed to its
	// certificate (or the chain diverged): the coefficients are then zero
	// plus output-perturbation noise (OutputNoise at the same n, lambda
	// and epsilon), a release that does not depend on the data, charged
	// like any other (epsilon_interval included, though no Hessian is
	// released: IntervalMethod says so). No release is retried with fresh
	// noise: once noise is drawn FitDiscrete returns no error.
	Fallback bool          `json:"fallback"`
	PSGLD    *PSGLDOptions `json:"psgld,omitempty"`
	// Newton and NewtonSteps are MethodNewton's settings and its released
	// steps (each a noisy score sum and Hessian sum at a public point).
	Newton      *NewtonOptions `json:"newton,omitempty"`
	NewtonSteps []NewtonStep   `json:"newton_steps,omitempty"`
	// NewtonStart are the released event and person-period counts the
	// start hazard is computed from.
	NewtonStart []NewtonBlock `json:"newton_start,omitempty"`
	// WaldSummary: the standard errors, z, p and hazard (odds) ratios.
	WaldSummary
	// Hessians is the interval release (hessian.go): noisy mean loss
	// Hessians at points computed from the released coefficients; the
	// last one is used by the intervals. Nil without one.
	Hessians []HessianRelease `json:"hessians,omitempty"`
	// CoefficientLimits: the de-biased estimate, the intervals and the
	// noise-only limits.
	CoefficientLimits
	// Iterations is the Newton iteration count, on the non-private path
	// only (for a private fit it would be a function of the data).
	Iterations int `json:"iterations,omitempty"`
	// Clipped counts negative times clamped to 0 plus covariate rows
	// clipped onto the unit ball, and CensoredAtHorizon the records
	// administratively censored at TimeMax (followed beyond it: censored
	// in the last interval, their event flag dropped). Neither is part of
	// the JSON release (exact counts about the data); the caller may export
	// them as operational metrics, or print them on the non-private path.
	Clipped           int `json:"-"`
	CensoredAtHorizon int `json:"-"`
	// LowInformation flags a private release that says little about the
	// coefficients (AssessInformation); LowInformationReason says why.
	LowInformation       bool   `json:"low_information"`
	LowInformationReason string `json:"low_information_reason"`
}

// WaldSummary is the Wald inference of a discrete fit, published as is by
// the fit topic (aggregators.DiscreteFields embeds it).
type WaldSummary struct {
	// AlphaSE, BetaSE, BetaZ, BetaP and the hazard (odds) ratios
	// exp(beta) with their limits: MethodNewton's Wald inference
	// (IntervalNewton), and for the MLE the standard errors from the
	// observed information at the estimate, the Wald z and two-sided p of
	// each beta, as summary.glm prints them (AlphaLower ... BetaUpper then
	// hold the Wald 95% intervals). With the cloglog link exp(beta) is the
	// grouped-time proportional-hazards hazard ratio; with logit an odds
	// ratio.
	AlphaSE          []float64 `json:"alpha_se,omitempty"`
	BetaSE           []float64 `json:"beta_se,omitempty"`
	BetaZ            []float64 `json:"beta_z,omitempty"`
	BetaP            []float64 `json:"beta_p,omitempty"`
	HazardRatio      []float64 `json:"hazard_ratio,omitempty"`
	HazardRatioLower []float64 `json:"hazard_ratio_lower,omitempty"`
	HazardRatioUpper []float64 `json:"hazard_ratio_upper,omitempty"`
}

// CoefficientLimits are a discrete fit's interval estimates, published as
// is by the fit topic (aggregators.DiscreteFields embeds it).
type CoefficientLimits struct {
	// AlphaDebiased and BetaDebiased are the de-biased estimate the
	// intervals are built around (inference.go): the released
	// coefficients with the ridge's shrinkage undone through the noisy
	// Hessian (post-processing). Nil where there are no intervals;
	// AlphaDebiased also nil for pSGLD (IntervalPSGLDWithheld).
	AlphaDebiased []float64 `json:"alpha_debiased,omitempty"`
	BetaDebiased  []float64 `json:"beta_debiased,omitempty"`
	// AlphaLower ... BetaUpper are the 95% intervals of each true
	// coefficient (sampling error, ridge bias and the mechanism's noise;
	// inference.go) and IntervalMethod how they were computed; nil where
	// the release has no Hessian (IntervalFraction 0, a fallback, a
	// non-logit link, a failed interval release). AlphaLower and
	// AlphaUpper are withheld (nil) in every release: they under-covered
	// at the default intervals (IntervalAlphaNote); a pSGLD release withholds beta's too
	// (IntervalPSGLDWithheld).
	AlphaLower     []float64 `json:"alpha_lower,omitempty"`
	AlphaUpper     []float64 `json:"alpha_upper,omitempty"`
	BetaLower      []float64 `json:"beta_lower,omitempty"`
	BetaUpper      []float64 `json:"beta_upper,omitempty"`
	IntervalMethod string    `json:"coefficient_interval_method,omitempty"`
	// NoiseOnlyAlphaLower ... are Ext-Out-Pert's (and a fallback's) 95%
	// noise-only limits: released ± the noise quantile; they cover the
	// ridge minimiser on the window's records, not the true coefficient.
	NoiseOnlyAlphaLower []float64 `json:"noise_only_alpha_lower,omitempty"`
	NoiseOnlyAlphaUpper []float64 `json:"noise_only_alpha_upper,omitempty"`
	NoiseOnlyBetaLower  []float64 `json:"noise_only_beta_lower,omitempty"`
	NoiseOnlyBetaUpper  []float64 `json:"noise_only_beta_upper,omitempty"`
}

// prepared is the validated, preprocessed problem.
type prepared struct {
	m       *discreteModel
	basis   [][]float64
	timeMax float64
	scaling Scaling
	clipped int
	beyond  int
}

func prepareDiscrete(data Data, opts *DiscreteOptions) (*prepared, error) {
	if err := data.validate(); err != nil {
		return nil, err
	}
	if opts.Link == "" {
		opts.Link = LinkLogit
	}
	if err := opts.Link.validate(); err != nil {
		return nil, err
	}
	if opts.Intervals == 0 {
		opts.Intervals = DefaultIntervals
	}
	if opts.Knots == 0 {
		opts.Knots = DefaultKnots
	}
	if opts.Intervals < 1 || opts.Intervals > 100000 {
		return nil, fmt.Errorf("intervals must be in [1, 100000], got %d", opts.Intervals)
	}
	private := opts.Method != MethodMLE
	p := data.Covariates()
	tmax := opts.TimeMax
	switch {
	case tmax == 0 && !private:
		for _, t := range data.Time {
			tmax = math.Max(tmax, t)
		}
		if tmax <= 0 {
			return nil, errors.New("all times are <= 0; set time max")
		}
	case tmax == 0:
		return nil, errors.New("a private fit needs a public time max (never derived from the data)")
	case !(tmax > 0) || math.IsInf(tmax, 0):
		return nil, fmt.Errorf("time max must be positive and finite, got %v", tmax)
	}
	scaling := opts.Scaling
	if opts.DataDerivedScaling {
		if private {
			return nil, errors.New("data-derived scaling is allowed on the non-private path only")
		}
		scaling = dataDerivedScaling(data.X, p)
	}
	if err := scaling.validate(p); err != nil {
		return nil, err
	}
	basis, err := SplineBasis(opts.Intervals, opts.Knots)
	if err != nil {
		return nil, err
	}
	n := data.Len()
	x, clipped := scaling.apply(data.X, p)
	m := &discreteModel{
		n: n, p: p, e: opts.Knots, q: opts.Intervals,
		basis: make([]float64, 0, opts.Intervals*opts.Knots),
		s:     make([]int32, n), event: append([]bool(nil), data.Event...),
		x: x, link: opts.Link,
	}
	for _, row := range basis {
		m.basis = append(m.basis, row...)
	}
	beyond := 0
	for i, t := range data.Time {
		if t > tmax {
			// Administrative censoring at the horizon (mechanisms.md
			// section 0): (tmax, censored), never an event at tmax.
			m.event[i] = false
			beyond++
		}
		tc := math.Min(math.Max(t, 0), tmax)
		if t < 0 {
			clipped++
		}
		m.s[i] = int32(intervalOf(tc/tmax, m.q))
	}
	return &prepared{m: m, basis: basis, timeMax: tmax, scaling: scaling, clipped: clipped, beyond: beyond}, nil
}

// startValue is alpha_1 = g(events / person-periods), the rest zero: a
// convenient Newton start (the convex objective's minimiser does not depend
// on it).
func startValue(m *discreteModel) []float64 {
	f := make([]float64, m.dim())
	var ev, pp float64
	for i := 0; i < m.n; i++ {
		pp += float64(m.s[i])
		if m.event[i] {
			ev++
		}
	}
	h := (ev + 0.5) / (pp + 1)
	switch m.link {
	case LinkCloglog, linkCloglogHuber:
		f[0] = math.Log(-math.Log1p(-h))
	case LinkProbit:
		f[0] = probitQuantile(h)
	default:
		f[0] = math.Log(h / (1 - h))
	}
	return f
}

// probitQuantile is Phi^{-1}(p) by bisection (start values only).
func probitQuantile(p float64) float64 {
	lo, hi := -40.0, 40.0
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if normCDF(mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// FitDiscrete fits the discrete-time survival model of mechanisms.md
// section 5 with the chosen method. src supplies every random draw of the
// private methods (and is not used by MethodMLE); production passes
// dp.NewSecureSource().
func FitDiscrete(data Data, opts DiscreteOptions, src dp.Source) (DiscreteResult, error) {
	res, err := fitDiscrete(data, opts, src, nil)
	if err != nil {
		return DiscreteResult{}, fmt.Errorf("fit discrete (%s): %w", opts.Method, err)
	}
	return res, nil
}

// outputMemo carries Ext-Out-Pert's noise-free ridge minimiser from one
// fit to the next of the same data and options (EvaluateMRE's repetitions:
// it depends on neither epsilon nor the noise), so a repetition only draws
// its noise. nil: no memo. Evaluation only; a release never shares one.
type outputMemo struct {
	done, ok    bool
	f           []float64
	noIntervals bool // skip setIntervals (draws nothing): tests of the noise alone
}

func fitDiscrete(data Data, opts DiscreteOptions, src dp.Source, memo *outputMemo) (DiscreteResult, error) {
	switch opts.Method {
	case MethodMLE, MethodOutput, MethodObjective, MethodPSGLD, MethodNewton:
	case "":
		return DiscreteResult{}, errors.New("method is required (mle, newton, output, objective or psgld)")
	default:
		return DiscreteResult{}, fmt.Errorf("unknown method %q", string(opts.Method))
	}
	pr, err := prepareDiscrete(data, &opts)
	if err != nil {
		return DiscreteResult{}, err
	}
	m := pr.m
	res := DiscreteResult{
		Method: opts.Method, Link: opts.Link, Intervals: m.q, Knots: m.e,
		TimeMax: pr.timeMax, Scaling: pr.scaling, Covariates: opts.Covariates,
		Clipped: pr.clipped, CensoredAtHorizon: pr.beyond,
	}
	if opts.Covariates != nil && len(opts.Covariates) != m.p {
		return DiscreteResult{}, fmt.Errorf("%d covariate names for %d covariates", len(opts.Covariates), m.p)
	}
	if opts.Lambda == 0 {
		opts.Lambda = DefaultLambda
	}
	if !(opts.Lambda > 0) || math.IsInf(opts.Lambda, 0) {
		return DiscreteResult{}, fmt.Errorf("lambda must be positive and finite, got %v", opts.Lambda)
	}
	nopts := newtonOptions{maxIter: opts.MaxIter}
	n := float64(m.n)

	if opts.Method == MethodMLE {
		// the non-private fit only: sufficient statistics per (covariate
		// pattern, interval) when the covariates are discrete (the private
		// methods keep the per-record sums their releases were built on)
		m.groups = opts.groups(m)
		o := objective{m: m, scale: 1 / n, memo: newEvalMemo(m)}
		if opts.Ridge {
			o.reg = opts.Lambda
			res.Lambda = opts.Lambda
		}
		r, err := minimise(o, startValue(m), nopts)
		if err != nil {
			return DiscreteResult{}, fmt.Errorf("mle: %w", err)
		}
		ll := -o.memo.loss(r.f)
		res.LogLik = &ll
		res.Epsilon = Epsilon(math.Inf(1))
		res.Guarantee = GuaranteeNone
		res.Neighbouring = NeighbouringNone
		res.N = int64(m.n)
		res.Iterations = r.iter
		res.Alpha, res.Beta = r.f[:m.e], r.f[m.e:]
		if opts.Ridge {
			res.IntervalMethod = IntervalRidgeNone
		} else {
			mleWald(o.memo, r.f, &res)
		}
		return res, nil
	}

	// private methods
	if src == nil {
		return DiscreteResult{}, errors.New("a private fit needs a randomness source")
	}
	if !(opts.Epsilon > 0) || math.IsInf(opts.Epsilon, 0) {
		return DiscreteResult{}, fmt.Errorf("epsilon must be positive and finite for a private fit, got %v", opts.Epsilon)
	}
	if m.n < 2 {
		return DiscreteResult{}, fmt.Errorf("a private fit needs at least 2 records, got %d", m.n)
	}
	phi := opts.IntervalFraction
	if !(phi >= 0 && phi <= 0.5) {
		return DiscreteResult{}, fmt.Errorf("interval fraction must be in [0, 0.5], got %v", phi)
	}
	if phi != 0 && opts.Method == MethodNewton {
		return DiscreteResult{}, errors.New("interval fraction does not apply to newton (it releases its own Hessians): must be 0")
	}
	if phi > 0 && opts.Link == LinkProbit {
		return DiscreteResult{}, fmt.Errorf("the interval release (interval fraction %v) is bounded for the logit and cloglog links only, got %s", phi, opts.Link)
	}
	res.Epsilon = Epsilon(opts.Epsilon)
	if opts.Method == MethodNewton {
		res.Neighbouring = NeighbouringReplaceOne
		res.Public = PublicDiscrete(opts.Method)
		res.N = int64(m.n)
		r, err := fitNewton(m, opts, src, res)
		if err == nil {
			r.LowInformation, r.LowInformationReason = AssessInformation(r)
		}
		return r, err
	}
	// eps + epsInt == opts.Epsilon exactly: eps >= opts.Epsilon/2, so the
	// subtraction is exact (Sterbenz)
	eps := opts.Epsilon * (1 - phi)
	epsInt := opts.Epsilon - eps
	res.EpsilonFit = eps
	res.EpsilonInterval = epsInt
	res.Neighbouring = NeighbouringReplaceOne
	res.Public = PublicDiscrete(opts.Method)
	res.N = int64(m.n)
	if opts.Method != MethodPSGLD && opts.Link == LinkProbit {
		return DiscreteResult{}, fmt.Errorf("method %s is proved for the logit and cloglog links only, got %s", opts.Method, opts.Link)
	}
	// cloglog: the private fits minimise the bounded-influence cloglog
	// loss (cloglog_huber.go), the published link stays cloglog
	m.link = privateLink(opts.Link)
	// The fallback's noise: output perturbation at the same n, lambda and
	// epsilon (data-independent given the public n).
	fbLink := m.link
	if fbLink == LinkProbit {
		fbLink = LinkLogit // psgld with probit: any data-independent noise will do
	}
	sens, err := OutputSensitivityFor(pr.basis, m.n, opts.Lambda, fbLink)
	if err != nil {
		return DiscreteResult{}, err
	}
	sensCert := sens + 2*CertificateTolerance/opts.Lambda
	outNoise, err := OutputNoise(sensCert, m.dim(), eps)
	if err != nil {
		return DiscreteResult{}, err
	}
	var f []float64
	ok := true
	switch opts.Method {
	case MethodOutput:
		if memo == nil || !memo.done {
			o := objective{m: m, scale: 1 / n, reg: opts.Lambda, memo: newEvalMemo(m)}
			r, err := minimise(o, startValue(m), nopts)
			ok = err == nil && certified(o, r.f)
			if ok {
				f = r.f // (its iteration count is a function of the data: not published)
			}
			if memo != nil {
				memo.done, memo.ok, memo.f = true, ok, append([]float64(nil), f...)
			}
		} else if ok = memo.ok; ok {
			f = append([]float64(nil), memo.f...)
		}
		res.Guarantee = GuaranteePureDPCertified
		res.Lambda = opts.Lambda
		res.Noise = &outNoise
		res.NoiseScale = outNoise.Scale
	case MethodObjective:
		epsPrime, delta, err := ObjPertBudgetFor(pr.basis, m.n, opts.Lambda, eps, m.link)
		if err != nil {
			return DiscreteResult{}, err
		}
		gb, err := GradientBoundFor(pr.basis, m.link)
		if err != nil {
			return DiscreteResult{}, err
		}
		bn, err := ObjectiveNoise(gb, m.dim(), epsPrime)
		if err != nil {
			return DiscreteResult{}, err
		}
		b, err := bn.Draw(src, m.dim())
		if err != nil {
			return DiscreteResult{}, fmt.Errorf("ext-obj-pert: %w", err)
		}
		o := objective{m: m, scale: 1 / n, reg: opts.Lambda + delta, lin: b, memo: newEvalMemo(m)}
		r, err := minimise(o, startValue(m), nopts)
		ok = err == nil && certified(o, r.f)
		if ok {
			f = r.f
			res.Noise = &bn
			res.NoiseScale = bn.Scale
		}
		res.Guarantee = GuaranteeObjective
		res.Lambda = opts.Lambda
		res.Delta = delta
		res.EpsilonPrime = epsPrime
	case MethodPSGLD:
		ps, err := samplePSGLD(m, eps, opts.PSGLD, src, nil)
		if err != nil && !errors.Is(err, errDiverged) {
			return DiscreteResult{}, err
		}
		ok = err == nil
		if ok {
			f = snapPSGLD(ps.f)
		}
		res.Guarantee = GuaranteeMCMC
		res.PSGLD = &ps.opts
	}
	switch {
	case !ok:
		res.Fallback = true
		res.Noise = &outNoise
		res.NoiseScale = outNoise.Scale
		f, err = outNoise.Draw(src, m.dim())
	case opts.Method == MethodOutput:
		f, err = outNoise.Release(src, f)
	}
	if err != nil {
		return DiscreteResult{}, fmt.Errorf("%s noise: %w", opts.Method, err)
	}
	res.Alpha, res.Beta = f[:m.e], f[m.e:]
	// From here on noise has been drawn: no error may be returned (a
	// caller that retried would release the data again with fresh noise).
	// Whatever fails below leaves the coefficients published without
	// Hessian-based limits, the reason in IntervalMethod, the whole
	// epsilon charged.
	var hessErr error
	if epsInt > 0 && !res.Fallback {
		// the interval release, at points computed from the released (now
		// public) f; a fallback's f does not depend on the data and gets
		// no interval (its epsilon_interval is unspent)
		hs, err := releaseHessiansFn(m, pr.basis, res, f, epsInt, src)
		if err != nil {
			// Hessians drawn before the failure are dropped (dropping a
			// release is post-processing); epsilon_interval stays charged
			hessErr = err
		} else {
			res.Hessians = hs
			res.Public = append(res.Public, "hessians.noise", "hessians.epsilon")
		}
	}
	if memo == nil || !memo.noIntervals {
		setIntervals(&res)
	}
	switch {
	case hessErr != nil:
		res.IntervalMethod = IntervalFailed + hessErr.Error() + IntervalUnspentNote
	case res.Fallback && epsInt > 0:
		res.IntervalMethod += IntervalUnspentNote
	}
	res.LowInformation, res.LowInformationReason = AssessInformation(res)
	return res, nil
}

// releaseHessiansFn is releaseHessians; internal tests replace it to force
// a failure of the interval release after the coefficients' noise.
var releaseHessiansFn = releaseHessians

// CertificateTolerance bounds the gradient norm at which a perturbation
// fit's minimiser is accepted: the objectives are (Lambda)-strongly convex,
// so ||grad|| <= CertificateTolerance puts the computed point within
// CertificateTolerance/Lambda of the exact minimiser, and Ext-Out-Pert's
// sensitivity is inflated by twice that (a public constant, so the noise
// never depends on how well a particular fit converged). A fit that misses
// it is released as the fallback.
const CertificateTolerance = 1e-9

// certified reports whether f passes the gradient certificate of o.
func certified(o objective, f []float64) bool {
	if f == nil {
		return false
	}
	for _, v := range f {
		// a non-finite coordinate would make the noise step fail after
		// drawing part of its noise: refuse it here, before any draw
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	g := make([]float64, len(f))
	v := o.value(f, g, nil)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	return math.Sqrt(sqNorm(g)) <= CertificateTolerance
}

// PublicDiscrete is the "public" list of a private discrete release: what
// it treats as public, i.e. does not protect. The sensitivities of all
// three methods are functions of the record count n (the papers' bounded
// DP, replace-one), so n is public and released exactly, and so is every
// mechanism parameter computed from n and the configuration.
func PublicDiscrete(m Method) []string {
	out := []string{"n", "time_max", "intervals", "knots", "scaling", "covariates", "link"}
	switch m {
	case MethodOutput:
		out = append(out, "lambda")
	case MethodObjective:
		out = append(out, "lambda", "delta", "epsilon_prime")
	case MethodPSGLD:
		out = append(out, "psgld")
	case MethodNewton:
		out = append(out, "newton")
	}
	return append(out, "noise")
}

type psgldRun struct {
	f    []float64
	opts PSGLDOptions
}

// PSGLDGrid is the public grid a pSGLD sample is rounded to before it is
// published (2^-24, far below its sampling spread): the sampler's float
// arithmetic uses step sizes and gradients that depend on the data, and its
// low bits would otherwise carry them.
const PSGLDGrid = 1.0 / (1 << 24)

// snapPSGLD rounds a pSGLD sample to PSGLDGrid (in place).
func snapPSGLD(f []float64) []float64 {
	for i, v := range f {
		f[i] = math.Round(v/PSGLDGrid) * PSGLDGrid
	}
	return f
}

// resolvePSGLD fills the defaults of PSGLDOptions for n records and budget
// epsilon.
func resolvePSGLD(o PSGLDOptions, n int, epsilon float64) (PSGLDOptions, error) {
	if o.V == 0 {
		o.V = 2 * math.Log(float64(n))
	}
	if o.Sigma == 0 {
		o.Sigma = DefaultSigmaFactor * 2 * o.V / epsilon
	}
	if o.Minibatch == 0 {
		o.Minibatch = DefaultMinibatch
	}
	o.Minibatch = min(o.Minibatch, n)
	if o.Epochs == 0 {
		o.Epochs = DefaultEpochs
	}
	if o.Steps == 0 {
		o.Steps = max(int(math.Ceil(o.Epochs*float64(n)/float64(o.Minibatch))), DefaultMinSteps)
	}
	if o.Tau == 0 {
		o.Tau = DefaultTau
	}
	if o.Lambda == 0 {
		o.Lambda = DefaultPSGLDLambda
	}
	if o.Mu == 0 {
		o.Mu = DefaultMu
	}
	if o.StepScale == 0 {
		o.StepScale = DefaultStepConstant / float64(n)
	}
	switch {
	case !(o.V > 0) || math.IsInf(o.V, 0):
		return o, fmt.Errorf("psgld: v must be positive and finite, got %v", o.V)
	case !(o.Sigma > 0) || math.IsInf(o.Sigma, 0):
		return o, fmt.Errorf("psgld: sigma must be positive and finite, got %v", o.Sigma)
	case o.Minibatch < 1:
		return o, fmt.Errorf("psgld: minibatch must be >= 1, got %d", o.Minibatch)
	case o.Steps < 1:
		return o, fmt.Errorf("psgld: steps must be >= 1, got %d", o.Steps)
	}
	return o, nil
}

// samplePSGLD draws one sample of Sanitized-EXP: the density proportional to
// exp(epsilon U(f) / (2v)) with U(f) = -(sigma/2)||f||^2 - sum_i C_v(l(f; d_i)),
// approximately, by pSGLD with minibatches of records (each record's loss
// walked over its own intervals; no person-period rows).
func samplePSGLD(m *discreteModel, epsilon float64, o PSGLDOptions, src dp.Source, trace func(t int, f []float64)) (psgldRun, error) {
	o, err := resolvePSGLD(o, m.n, epsilon)
	if err != nil {
		return psgldRun{}, err
	}
	dim := m.dim()
	k := o.Minibatch
	perm := make([]int, m.n)
	for i := range perm {
		perm[i] = i
	}
	st := m.newState()
	gi := make([]float64, dim)
	sum := make([]float64, dim)
	c := epsilon / (2 * o.V)
	nk := float64(m.n) / float64(k)
	oracle := func(_ int, f, out []float64) error {
		m.prepare(st, f[:m.e])
		for j := range sum {
			sum[j] = 0
		}
		for b := 0; b < k; b++ {
			// partial Fisher–Yates: perm[b] becomes a uniform draw
			// without replacement from the remaining records
			r := b + int(dp.Uint64n(src, uint64(m.n-b)))
			perm[b], perm[r] = perm[r], perm[b]
			i := perm[b]
			l := m.recordLossGrad(i, f[m.e:], st, gi)
			th := math.Tanh(l / o.V)
			w := 1 - th*th // C_v'(l)
			if w == 0 || math.IsNaN(l) {
				continue
			}
			for j := range sum {
				sum[j] += w * gi[j]
			}
		}
		for j := range out {
			out[j] = c * (o.Sigma*f[j] + nk*sum[j])
		}
		return nil
	}
	cfg := SamplerConfig{
		Steps: o.Steps, StepScale: o.StepScale, StepOffset: o.StepOffset,
		Tau: o.Tau, Lambda: o.Lambda, Mu: o.Mu, GradScale: float64(m.n),
	}
	f, err := RunPSGLD(make([]float64, dim), cfg, oracle, src, trace)
	if err != nil {
		return psgldRun{opts: o}, err
	}
	return psgldRun{f: f, opts: o}, nil
}
