package aggregators

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/survival"
)

// KMParams are the params of a km aggregate, windowed or cumulative (the
// YAML keys in the tags).
type KMParams struct {
	// BinWidth is the histogram bin width in time units (default
	// time_max/150, km.DefaultBinWidth).
	BinWidth float64 `yaml:"bin_width"`
	// Method is "hierarchical" (default: tree noise with consistent
	// inference, km.HierarchicalKM) or "noisy-histogram" (flat cell
	// noise, km.NoisyHistogramKM). Cumulative aggregates use the
	// binary-tree counter whatever the method.
	Method string `yaml:"method"`
	// Conf is the KM confidence level (default 0.95); MaxNoiseStdErr its
	// truncation (default km.DefaultMaxNoiseStdErr).
	Conf           float64 `yaml:"conf"`
	MaxNoiseStdErr float64 `yaml:"max_noise_std_err"`
	// LogRankSims (not cumulative): simulated releases behind the
	// calibrated log-rank p-values (km.KMOptions; 0 = the default 199;
	// negative disables: null p-values).
	LogRankSims int `yaml:"logrank_sims"`
	// IntervalSims (not cumulative): simulated releases behind the
	// intervals' noise SD (km.KMOptions; 0 = the default 100; negative
	// disables: first-order analytic noise SD).
	IntervalSims int `yaml:"interval_sims"`
}

func (p KMParams) binWidth() float64 { return p.BinWidth }
func (p KMParams) flat() flatParams {
	return flatParams{BinWidth: p.BinWidth, Method: p.Method, Conf: p.Conf, MaxNoiseStdErr: p.MaxNoiseStdErr,
		LogRankSims: p.LogRankSims, IntervalSims: p.IntervalSims}
}

// kmKind is the windowed Kaplan–Meier curve: one histogram of the window's
// records per cohort, released with tree noise (hierarchical, default) or
// flat cell noise (noisy-histogram). Add/remove-one; n is protected.
type kmKind struct{ histKind }

func (kmKind) defaults(c *Config) {
	p := paramsOf[KMParams](*c)
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
	c.Params = p
}

func (kmKind) params(d *paramDecoder) Params {
	var p KMParams
	d.float("bin_width", &p.BinWidth)
	d.str("method", &p.Method)
	d.float("conf", &p.Conf)
	d.float("max_noise_std_err", &p.MaxNoiseStdErr)
	d.int("logrank_sims", &p.LogRankSims, 1e6, "1e6")
	d.int("interval_sims", &p.IntervalSims, 1e6, "1e6")
	return p
}

func (kmKind) check(c Config) []error {
	errs := checkBinWidth(c)
	p := paramsOf[KMParams](c)
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
	if paramsOf[KMParams](a.cfg).Method == MethodNoisyHistogram {
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
	p := paramsOf[KMParams](c)
	return km.KMOptions{Epsilon: c.Epsilon, Conf: p.Conf, MaxNoiseStdErr: p.MaxNoiseStdErr,
		LogRankSims: p.LogRankSims, IntervalSims: p.IntervalSims}
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
		m.KMFields.KMInference = ck.Inference()
		m.LowInformation, m.LowInformationReason = ck.LowInformation, ck.LowInformationReason
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

// KMFields are the curve of a km release (survfit names).
type KMFields struct {
	// KMCurve is the curve itself (time ... median_upper), the wire struct
	// schemas owns.
	schemas.KMCurve
	Conf float64 `json:"conf"`
	// ConfType is the interval type of lower/upper, R survfit's conf.type
	// name: "log-log" (km.ConfTypeLogLog) in every private release.
	ConfType    string                 `json:"conf_type"`
	NoiseStdErr schemas.NullableSeries `json:"noise_std_err"`
	TruncatedAt F                      `json:"truncated_at"`
	LogRank     *LogRank               `json:"logrank,omitempty"`
	// The sampling-only (Greenwood) interval, which ignores the privacy
	// noise (for comparison only: std_err, lower and upper above are the
	// noise-aware values), the median note, the noise-dominated tail, the
	// low-information threshold (below which the cohort is flagged
	// FitMessage.LowInformation) and the simultaneous band
	// (dpfit/km/km_interval.go).
	schemas.KMInference
}

// LogRank is the log-rank test over the window's cohorts, from the same
// noisy counts (post-processing); identical in every cohort's message.
// ChiSq is the statistic of the released counts, P its p-value against a
// reference distribution that includes the noise (Calibration says how),
// PNaive the chi-square p-value that treats the noisy counts as exact
// (misleading; for comparison only). DF is null when there is no test.
type LogRank struct {
	ChiSq F    `json:"chisq"`
	DF    *int `json:"df"`
	P     F    `json:"p"`
	// PUpper is set (and P null) when the calibrated p-value is at its
	// Monte-Carlo floor 1/(1 + sims): the p-value is only bounded, p <=
	// p_upper (dpfit.PValueBound). Null otherwise.
	PUpper      F                 `json:"p_upper"`
	PNaive      F                 `json:"p_naive"`
	Calibration string            `json:"calibration"`
	Note        string            `json:"note,omitempty"`
	Pairwise    []PairwiseLogRank `json:"pairwise"`
}

// PairwiseLogRank is the test between two cohorts (labels).
type PairwiseLogRank struct {
	A      string `json:"a"`
	B      string `json:"b"`
	ChiSq  F      `json:"chisq"`
	P      F      `json:"p"`
	PUpper F      `json:"p_upper"` // as LogRank.PUpper
	PNaive F      `json:"p_naive"`
}

// logRankDoc is the release's log-rank block (nil with one cohort).
func logRankDoc(res km.KMResult, labels []string) *LogRank {
	if len(labels) < 2 {
		return nil
	}
	p, pu := dpfit.PValueBound(res.LogRank.P, res.LogRankPFloor)
	lr := &LogRank{ChiSq: F(res.LogRank.ChiSq), P: F(p), PUpper: F(pu), PNaive: F(res.LogRankNaiveP),
		Calibration: res.LogRankCalibration, Note: res.LogRankNote, Pairwise: []PairwiseLogRank{}}
	if df := res.LogRank.DF; df >= 1 && !math.IsNaN(res.LogRank.ChiSq) {
		lr.DF = &df
	}
	for i, p := range res.Pairwise {
		pn := math.NaN()
		if i < len(res.PairwiseNaiveP) {
			pn = res.PairwiseNaiveP[i]
		}
		pp, ppu := dpfit.PValueBound(p.P, res.LogRankPFloor)
		lr.Pairwise = append(lr.Pairwise, PairwiseLogRank{A: labels[p.A], B: labels[p.B], ChiSq: F(p.ChiSq), P: F(pp), PUpper: F(ppu), PNaive: F(pn)})
	}
	return lr
}
