package aggregators

import (
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/survival"
)

// KMParams are the params of a km aggregate (embedded in Params).
type KMParams struct {
	// Conf is the KM confidence level (default 0.95); MaxNoiseStdErr its
	// truncation (default km.DefaultMaxNoiseStdErr).
	Conf           float64 `json:"conf" yaml:"conf"`
	MaxNoiseStdErr float64 `json:"max_noise_std_err" yaml:"max_noise_std_err"`
	// LogRankSims (not cumulative): simulated releases behind the
	// calibrated log-rank p-values (km.KMOptions; 0 = the default 199;
	// negative disables: null p-values).
	LogRankSims int `json:"logrank_sims,omitempty" yaml:"logrank_sims"`
}

// kmKind is the windowed Kaplan–Meier curve: one histogram of the window's
// records per cohort, released with tree noise (hierarchical, default) or
// flat cell noise (noisy-histogram). Add/remove-one; n is protected.
type kmKind struct{ histKind }

func (kmKind) defaults(c *Config) {
	p := &c.Params
	if p.BinWidth == 0 {
		// time_max / 150 (issue 12): 1-unit bins double the curves' error
		p.BinWidth = km.DefaultBinWidth(c.TimeMax)
	}
	if p.BinWidth == 0 { // no usable time_max (Check reports it)
		p.BinWidth = 1
	}
	if p.Method == "" {
		p.Method = MethodHierarchical
	}
	if p.Conf == 0 {
		p.Conf = 0.95
	}
	if p.MaxNoiseStdErr == 0 {
		p.MaxNoiseStdErr = km.DefaultMaxNoiseStdErr
	}
}

func (kmKind) params(d *paramDecoder, p *Params) {
	d.float("bin_width", &p.BinWidth)
	d.str("method", &p.Method)
	d.float("conf", &p.Conf)
	d.float("max_noise_std_err", &p.MaxNoiseStdErr)
	d.int("logrank_sims", &p.LogRankSims, 1e6, "1e6")
	d.int("interval_sims", &p.IntervalSims, 1e6, "1e6")
}

func (kmKind) check(c Config) []error {
	errs := checkBinWidth(c)
	p := c.Params
	if p.Method != MethodHierarchical && p.Method != MethodNoisyHistogram {
		errs = append(errs, fieldErr("params.method", ErrInvalid, "%q is not %s or %s", p.Method, MethodHierarchical, MethodNoisyHistogram))
	}
	if !(p.Conf > 0 && p.Conf < 1) {
		errs = append(errs, fieldErr("params.conf", ErrInvalid, "must be in (0, 1), got %v", p.Conf))
	}
	if !(p.MaxNoiseStdErr > 0) {
		errs = append(errs, fieldErr("params.max_noise_std_err", ErrInvalid, "must be positive, got %v", p.MaxNoiseStdErr))
	}
	return errs
}

// plan: a window's fit runs off the intake like every windowed kind's
// (EngineConfig.AsyncFits): its calibrated log-rank, interval and band
// simulations took 0.1-2.6 s per window under load (docs/performance.md,
// issue 21), time the intake would wait inline.
// Its windows hold only their counts: they are not bounded by
// max_pending_windows.
func (kmKind) plan(a *aggregate) plan {
	p := windowPlan(a)
	p.async, p.unbounded = true, true
	return p
}

// release fits the closing window's histogram with the configured
// method.
func (k kmKind) release(a *aggregate, c *closing, src dp.Source, remaining map[string]float64) ([]FitMessage, error) {
	fit := km.HierarchicalKM
	if a.cfg.Params.Method == MethodNoisyHistogram {
		fit = km.NoisyHistogramKM
	}
	res, err := fit(histOf(c.w), src, k.options(a.cfg))
	if err != nil {
		return nil, fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
	}
	return k.messages(a, c, res, remaining, a.cfg.ChargedEpsilon(), compositionWindow), nil
}

// options are the estimator's options of c's params.
func (kmKind) options(c Config) km.KMOptions {
	return km.KMOptions{Epsilon: c.Epsilon, Conf: c.Params.Conf, MaxNoiseStdErr: c.Params.MaxNoiseStdErr,
		LogRankSims: c.Params.LogRankSims, IntervalSims: c.Params.IntervalSims}
}

// messages are the release of a KM result (windowed, or the cumulative
// counter's): one message per cohort.
func (kmKind) messages(a *aggregate, c *closing, res km.KMResult, remaining map[string]float64, charged float64, composition string) []FitMessage {
	lr := logRankDoc(res, a.cfg.Cohorts)
	out := make([]FitMessage, len(res.Cohorts))
	for i, ck := range res.Cohorts {
		m := a.header(c.start, i, remaining, charged)
		m.Method, m.Mechanism = res.Method, res.Mechanism
		m.Guarantee, m.Neighbouring = res.Guarantee, res.Neighbouring
		m.Public = publicKM()
		m.Composition = composition
		m.N = F(ck.N)
		m.KMFields = kmFields(ck.Curve)
		m.KMFields.NoiseStdErr = fs(ck.NoiseStdErr)
		m.KMFields.TruncatedAt = F(ck.TruncatedAt)
		m.KMFields.LogRank = lr
		m.KMFields.SamplingStdErr = fs(ck.SamplingStdErr)
		m.KMFields.SamplingLower = fs(ck.SamplingLower)
		m.KMFields.SamplingUpper = fs(ck.SamplingUpper)
		m.KMFields.MedianNote = ck.MedianNote
		m.KMFields.NoiseDominatedFrom = F(ck.NoiseDominatedFrom)
		m.KMFields.NoiseTailSD = km.DefaultNoiseTailSD
		m.LowInformation = ck.LowInformation
		m.KMFields.LowInformationThreshold = F(ck.LowInformationThreshold)
		m.LowInformationReason = ck.LowInformationReason
		m.KMFields.BandLower, m.KMFields.BandUpper = fs(ck.BandLower), fs(ck.BandUpper)
		m.KMFields.BandFrom, m.KMFields.BandTo = F(ck.BandFrom), F(ck.BandTo)
		m.KMFields.BandCritical, m.KMFields.BandMethod = F(ck.BandCritical), ck.BandMethod
		out[i] = m
	}
	return out
}

func kmFields(cv survival.KMCurve) *KMFields {
	return &KMFields{KMCurve: cv.Wire(), Conf: cv.Conf, ConfType: km.ConfTypeLogLog, NoiseStdErr: []F{}}
}

// publicKM is the "public" list of a km release: configuration only. The
// record count is protected (add/remove-one); n is the sum of noisy cells.
func publicKM() []string {
	return []string{"time_max", "time_unit", "bin_width", "cohorts", "window"}
}
