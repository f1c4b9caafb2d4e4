package aggregators

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/survival"
)

// WeibullParams are the params of a weibull aggregate (the YAML keys in
// the tags).
type WeibullParams struct {
	// BinWidth is the histogram bin width in time units (default 1); the
	// fits see each record's time as the start of its bin.
	BinWidth float64 `yaml:"bin_width"`
	// Method is "lsp" (default), "laplace" or "saa".
	Method string `yaml:"method"`
	// IntervalSims: the simulated releases per candidate shape of the
	// noise-aware intervals (weibull.WeibullIntervalOptions; 0 = default,
	// negative = null intervals).
	IntervalSims int `yaml:"interval_sims"`
	// Omega, Gamma and Rungs are the Weibull bounds (defaults 6, 10, 500:
	// weibull.WeibullConfig).
	Omega float64 `yaml:"omega"`
	Gamma float64 `yaml:"gamma"`
	Rungs int     `yaml:"rungs"`
}

func (p WeibullParams) binWidth() float64 { return p.BinWidth }
func (p WeibullParams) flat() flatParams {
	return flatParams{BinWidth: p.BinWidth, Method: p.Method, IntervalSims: p.IntervalSims, Omega: p.Omega, Gamma: p.Gamma, Rungs: p.Rungs}
}

// weibullKind is the per-cohort Weibull fit on the window's histogram:
// lsp (default) and laplace (add/remove-one), saa (replace-one, n public).
type weibullKind struct{ histKind }

func (k weibullKind) defaults(c *Config) {
	p := paramsOf[WeibullParams](*c)
	if p.BinWidth == 0 {
		p.BinWidth = 1
	}
	if p.Method == "" {
		p.Method = weibull.WeibullMethodLSP
	}
	w := k.config(c.Epsilon, c.TimeMax, p)
	p.Omega, p.Gamma, p.Rungs = w.Omega, w.Gamma, w.Rungs
	c.Params = p
}

func (weibullKind) params(d *paramDecoder) Params {
	var p WeibullParams
	d.float("bin_width", &p.BinWidth)
	d.str("method", &p.Method)
	d.int("interval_sims", &p.IntervalSims, 1e6, "1e6")
	d.float("omega", &p.Omega)
	d.float("gamma", &p.Gamma)
	d.int("rungs", &p.Rungs, defaultIntLimit, "")
	return p
}

func (k weibullKind) check(c Config) []error {
	errs := checkBinWidth(c)
	p := paramsOf[WeibullParams](c)
	switch p.Method {
	case weibull.WeibullMethodLSP, weibull.WeibullMethodLaplace, weibull.WeibullMethodSAA:
	default:
		errs = append(errs, fieldErr("params.method", ErrInvalid, "%q is not lsp, laplace or saa", p.Method))
	}
	if n := p.IntervalSims; n > 0 && n < weibull.DefaultWeibullIntervalSims {
		errs = append(errs, fieldErr("params.interval_sims", ErrInvalid, "want 0 (default), negative (no intervals) or at least %d for 95%% intervals, got %d",
			weibull.DefaultWeibullIntervalSims, n))
	}
	if c.Epsilon > 0 && c.TimeMax > 0 {
		if err := k.config(c.Epsilon, c.TimeMax, p).Validate(); err != nil {
			errs = append(errs, fieldErr("params", ErrInvalid, "%v", err))
		}
	}
	return errs
}

// plan: a window's fit (noise-aware intervals: tens of seconds) may run on
// its own goroutine.
func (weibullKind) plan(a *aggregate) plan {
	p := windowPlan(a)
	p.async = true
	return p
}

func (weibullKind) exactCount(c Config) bool {
	return paramsOf[WeibullParams](c).Method == weibull.WeibullMethodSAA
}

// config is the estimator's configuration of an aggregate's epsilon, time
// bound and params (with the estimator's defaults).
func (weibullKind) config(epsilon, timeMax float64, p WeibullParams) weibull.WeibullConfig {
	return weibull.WeibullConfig{Epsilon: epsilon, TimeMax: timeMax, Omega: p.Omega, Gamma: p.Gamma, Rungs: p.Rungs}.WithDefaults()
}

// release fits each cohort's Weibull model on the closing window's
// histogram (each record at the start of its bin).
func (k weibullKind) release(a *aggregate, c *closing, src dp.Source, remaining map[string]float64) ([]FitMessage, error) {
	h := histOf(c.w)
	p := paramsOf[WeibullParams](a.cfg)
	wc := k.config(a.cfg.Epsilon, a.cfg.TimeMax, p)
	out := make([]FitMessage, len(a.cfg.Cohorts))
	for k := range a.cfg.Cohorts {
		var comp survival.Compressed
		for b := 0; b < h.Bins; b++ {
			e, n := h.Events[k][b], h.Events[k][b]+h.Censor[k][b]
			if n == 0 {
				continue
			}
			comp.Time = append(comp.Time, h.BinStart(b))
			comp.Events = append(comp.Events, float64(e))
			comp.Count = append(comp.Count, float64(n))
		}
		fit, err := weibull.FitWeibull(src, comp, wc, p.Method)
		if err != nil {
			return nil, fmt.Errorf("aggregate %q: cohort %d: %w", a.cfg.Name, k, err)
		}
		m := a.header(c.start, k, remaining, a.cfg.ChargedEpsilon())
		m.Method, m.Guarantee = fit.Method, fit.Guarantee
		m.Mechanism = weibullMechanism(fit.Method)
		m.Neighbouring, m.Composition = weibullNeighbouring(fit.Method), weibullComposition(fit.Method)
		m.Public = weibullWindowPublic(fit.Method)
		m.N = F(math.NaN())
		if fit.Method == weibull.WeibullMethodLSP {
			// TLL's noisy event count (the record count is not released),
			// clamped at 0: a count is never negative (post-processing)
			m.N = F(math.Max(fit.N, 0))
		}
		m.WeibullFields = &WeibullFields{Shape: F(fit.Shape), Scale: F(fit.Scale), ScaleUnit: weibullScaleUnitDescription, Params: fit.Params}
		if err := weibullIntervals(m.WeibullFields, fit, p.IntervalSims, h.BinWidth); err != nil {
			return nil, fmt.Errorf("aggregate %q: cohort %d: %w", a.cfg.Name, k, err)
		}
		wf := m.WeibullFields
		iv := &weibull.WeibullInterval{ShapeLower: float64(wf.ShapeLower), ShapeUpper: float64(wf.ShapeUpper)}
		m.LowInformation, m.LowInformationReason = weibull.WeibullLowInformation(fit, iv)
		out[k] = m
	}
	return out, nil
}

// WeibullFields are the parameters of a weibull release:
// S(t) = exp(-(t/scale)^shape), t in normalised units (t / time_max).
type WeibullFields struct {
	Shape     F                  `json:"shape"`
	Scale     F                  `json:"scale"`
	ScaleUnit string             `json:"scale_unit"`
	Params    map[string]float64 `json:"params"`
	// Noise-aware intervals (weibull.WeibullIntervals; post-processing of
	// the release): null when disabled (params.interval_sims < 0).
	ShapeLower     F      `json:"shape_lower"`
	ShapeUpper     F      `json:"shape_upper"`
	ScaleLower     F      `json:"scale_lower"`
	ScaleUpper     F      `json:"scale_upper"`
	IntervalConf   F      `json:"interval_conf"`
	IntervalMethod string `json:"interval_method"`
	// ScaleLimitNote says why a scale limit is null although intervals
	// were computed (weibull.WeibullScaleLimitMax); omitted otherwise.
	ScaleLimitNote string `json:"scale_limit_note,omitempty"`
}

// weibullNeighbouring is the relation of a weibull release: add/remove-one
// for LSP+TLL and the Laplace baseline (weibull.WeibullNeighbouringAddRemove);
// SAA's block count is a function of the record count, analysed for a
// fixed count only (replace-one).
func weibullNeighbouring(method string) string {
	if method == weibull.WeibullMethodSAA {
		return NeighbouringReplaceInCohort
	}
	return NeighbouringAddRemoveInCohort
}

// weibullComposition is the composition text of a weibull release: it
// names the same relation as weibullNeighbouring.
func weibullComposition(method string) string {
	if method == weibull.WeibullMethodSAA {
		return compositionWindowWeibullSAA
	}
	return compositionWindowWeibull
}

// weibullWindowPublic is the "public" list of a windowed weibull release
// (the stream's time bounds, cohorts, window and params; the one-shot CLI
// fit lists its configuration instead: cli.weibullConfigPublic).
func weibullWindowPublic(method string) []string {
	out := []string{"time_max", "time_unit", "bin_width", "cohorts", "window", "params"}
	if method == weibull.WeibullMethodSAA {
		out = append(out, "n (the cohort's record count in the window)")
	}
	return out
}

func weibullMechanism(method string) string {
	switch method {
	case weibull.WeibullMethodLSP:
		return "LSP (ladder exponential mechanism, epsilon/2, sampled exactly on the shape grid params.shape_grid) for the shape; TLL (discrete Laplace on the grid params.tll_grid, sensitivity inflated by one grid step, on the event count and on sum t^p, epsilon/4 each) for the scale; n is the noisy event count"
	case weibull.WeibullMethodLaplace:
		return "baseline: discrete Laplace on a grid (params.shape_grid, params.scale_grid; sensitivity inflated by one grid step) on the clamped MLE shape and scale (sensitivity gamma and scale_bound, epsilon/2 each)"
	case weibull.WeibullMethodSAA:
		return "baseline: sample and aggregate (block MLEs, clamped mean, Laplace)"
	}
	return method
}
