package km

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// Guarantee and neighbouring-relation strings carried by every release.
const (
	GuaranteePureDP       = "pure-dp"
	GuaranteePerTimePoint = "pure-dp (per cohort and time point)"
	GuaranteeLocalDP      = "local-dp"
	GuaranteeNone         = "none (non-private)"
	NeighbouringReplace   = "replace-one"
	// NeighbouringAddRemove is the relation of the central KM releases:
	// whether a record is in the data at all is protected, and so is the
	// record count.
	NeighbouringAddRemove = "add/remove-one (one record added to or removed from the window; the record count is protected; a replaced record is two such steps and costs 2 x epsilon)"
)

// KMCellSensitivity is the L1 sensitivity of a KM histogram (every cohort's
// event and censoring cells) under add/remove-one: a record is counted in
// exactly one cell. The noise scale of each cell is KMCellSensitivity /
// epsilon (1/epsilon; it was 2/epsilon under replace-one, whose
// sensitivity is 2).
const KMCellSensitivity = 1.0

// KM method names (the "method" field of a release).
const (
	MethodNoisyHistogramKM = "noisy-histogram-km"
	MethodLNTE             = "lnte"
	MethodRRRKM            = "rrr-debiased-km"
	MethodTreeKM           = "tree-counter-km"
)

// DefaultMaxNoiseStdErr is the default truncation of the private curves:
// a curve stops where the standard deviation of log S due to the privacy
// noise alone would exceed 0.25 (see KMOptions.MaxNoiseStdErr).
const DefaultMaxNoiseStdErr = 0.25

// KMOptions configures the private Kaplan–Meier fits.
type KMOptions struct {
	// Epsilon is the privacy budget of the release (> 0). +Inf releases
	// the exact counts and is refused unless AllowNonPrivate is set.
	Epsilon float64
	// AllowNonPrivate permits Epsilon = +Inf (the analysts' and tests'
	// reference path; never in a streaming configuration).
	AllowNonPrivate bool
	// Conf is the confidence level of the Greenwood intervals (default 0.95).
	Conf float64
	// MaxNoiseStdErr truncates each curve where the accumulated standard
	// deviation of log S caused by the privacy noise (sum over bins of the
	// event-cell noise variance / at-risk^2, from public noise variances and
	// noisy at-risk numbers: post-processing) would exceed it, or where a
	// single bin's share (noise SD / at-risk) would exceed half of it —
	// the noise is heavy-tailed, and one bin with few at risk can otherwise
	// drop the curve by a large step. In the tail few subjects remain at
	// risk while every bin still carries noise of the same size, so without
	// truncation the tail is noise. 0 means DefaultMaxNoiseStdErr; +Inf
	// disables truncation.
	MaxNoiseStdErr float64
	// NoiseTailSD is the public threshold of CohortKM.NoiseDominatedFrom:
	// the curve is marked from the first time the noise alone gives S a
	// standard deviation above it. 0 means DefaultNoiseTailSD.
	NoiseTailSD float64
	// LogRankSims is the number of Monte-Carlo releases simulated under the
	// null for the calibrated log-rank p-values (logrank_dp.go); 0 means
	// DefaultLogRankSims (fewer, at least 19, above 4096 cells); negative
	// disables the calibration (the p-values are then null, the naive ones
	// kept under their names). Used by HierarchicalKM and
	// NoisyHistogramKM.
	LogRankSims int
	// IntervalSims is the number of simulated releases behind the noise
	// SD of the intervals (simulateNoiseSD); 0 means DefaultIntervalSims,
	// negative keeps the first-order analytic SD.
	IntervalSims int
	// naiveLogRank skips the calibration (the simulated releases);
	// noLogRank skips the tests altogether (the interval simulations).
	naiveLogRank, noLogRank bool
	// noIntervals keeps the Greenwood interval of the counts and R's
	// median rules (the simulated releases, which use S or the counts
	// only).
	noIntervals bool
	// countsOnly stops at the released per-bin counts: no curves, no
	// pooled curve (the log-rank's simulated null releases, whose tests
	// read the counts only).
	countsOnly bool
	// survOnly draws each curve's S alone (Curve.Surv, by the product of
	// survival.KaplanMeierFromCounts on the consistent counts, the same
	// arithmetic in the same order): no counts kept, no Greenwood SE,
	// limits or median (the interval simulations, which read S only).
	survOnly bool
}

func (o KMOptions) withDefaults() (KMOptions, error) {
	if o.Conf == 0 {
		o.Conf = 0.95
	}
	if !(o.Conf > 0 && o.Conf < 1) {
		return o, fmt.Errorf("confidence level must be in (0, 1), got %v", o.Conf)
	}
	if o.MaxNoiseStdErr == 0 {
		o.MaxNoiseStdErr = DefaultMaxNoiseStdErr
	}
	if !(o.MaxNoiseStdErr > 0) {
		return o, fmt.Errorf("max noise std err must be positive, got %v", o.MaxNoiseStdErr)
	}
	return o, nil
}

func (o KMOptions) checkEpsilon() error {
	switch {
	case math.IsInf(o.Epsilon, 1):
		if !o.AllowNonPrivate {
			return fmt.Errorf("epsilon = +Inf (no noise) requires AllowNonPrivate")
		}
	case !(o.Epsilon > 0):
		return fmt.Errorf("epsilon must be positive, got %v", o.Epsilon)
	}
	return nil
}

// histogramOptions checks a histogram release's inputs: the histogram and
// the options, returned with their defaults filled in.
func histogramOptions(h *Histogram, opts KMOptions) (KMOptions, error) {
	if err := h.check(); err != nil {
		return KMOptions{}, err
	}
	return opts.withDefaults()
}

// centralOptions is histogramOptions for a central release (noisy
// histogram, hierarchical): also the epsilon, and a randomness source
// wherever noise is drawn (a finite epsilon).
func centralOptions(h *Histogram, src dp.Source, opts KMOptions) (KMOptions, error) {
	o, err := histogramOptions(h, opts)
	if err != nil {
		return KMOptions{}, err
	}
	if err := o.checkEpsilon(); err != nil {
		return KMOptions{}, err
	}
	if src == nil && !math.IsInf(o.Epsilon, 1) {
		return KMOptions{}, fmt.Errorf("nil randomness source")
	}
	return o, nil
}

// CohortKM is one private curve.
type CohortKM struct {
	// Cohort is the cohort index; -1 for the curve of all cohorts pooled.
	Cohort int `json:"cohort"`
	// N is the released (noisy, post-processed) number of records,
	// max(N_hat, 0) for the noisy count N_hat; the at-risk numbers never
	// exceed it and the curve's first at-risk number equals it.
	N float64 `json:"n"`
	// Curve holds the post-processed counts and the curve drawn from them by
	// survival.KaplanMeierFromCounts, with the noise-aware interval of
	// km_inference.go: StdErr, Lower, Upper and the median limits combine
	// the sampling (Greenwood) and the privacy-noise variance of log S.
	Curve survival.KMCurve `json:"curve"`
	// SamplingStdErr, SamplingLower and SamplingUpper are the Greenwood
	// (sampling-only) standard error of log S and interval, which ignore
	// the privacy noise; for comparison only.
	SamplingStdErr []float64 `json:"sampling_std_err"`
	SamplingLower  []float64 `json:"sampling_lower"`
	SamplingUpper  []float64 `json:"sampling_upper"`
	// MedianNote says why a private median is null (km_inference.go);
	// empty when it is released.
	MedianNote string `json:"median_note,omitempty"`
	// NoiseDominatedFrom is the first time from which the noise alone gives
	// S a standard deviation above KMOptions.NoiseTailSD; NaN if none.
	NoiseDominatedFrom float64 `json:"noise_dominated_from"`
	// LowInformation flags a cohort whose noisy record count is below
	// LowInformationThreshold (public: from the mechanism's noise scale);
	// its curve is released, its median is not.
	LowInformation          bool    `json:"low_information"`
	LowInformationThreshold float64 `json:"low_information_threshold"`
	// LowInformationReason says why LowInformation is set ("" if not).
	LowInformationReason string `json:"low_information_reason"`
	// BandLower and BandUpper are a simultaneous confidence band for S
	// over the released times in [BandFrom, BandTo] (NaN outside it),
	// BandCritical its critical value, BandMethod how it was obtained
	// (km_interval.go); nil and NaN, with BandMethod = BandMethodNone,
	// where no band is computed.
	BandLower    []float64 `json:"band_lower"`
	BandUpper    []float64 `json:"band_upper"`
	BandFrom     float64   `json:"band_from"`
	BandTo       float64   `json:"band_to"`
	BandCritical float64   `json:"band_critical_value"`
	BandMethod   string    `json:"band_method"`
	// nHat is the noisy record count (sum of the released cells).
	nHat float64
	// noiseSemi[row] holds the simulated noise's SDs of log S below and
	// above the released curve while the intervals are drawn
	// (simulateNoiseSD); nil otherwise.
	noiseSemi [][2]float64
	// NoiseStdErr[i] approximates the standard deviation of log Surv[i] due
	// to the privacy noise alone (nil where not modelled, as in LNTE).
	NoiseStdErr []float64 `json:"noise_std_err,omitempty"`
	// TruncatedAt is the start of the first bin not reported because the
	// noise bound was reached or no one was left at risk; NaN if the curve
	// covers the whole domain.
	TruncatedAt float64 `json:"truncated_at"`
	// BinNRisk and BinNEvent are the post-processed at-risk and event counts
	// on the full bin grid (zero after truncation); the log-rank tests use
	// them.
	BinNRisk  []float64 `json:"-"`
	BinNEvent []float64 `json:"-"`
}

// KMResult is a private Kaplan–Meier release with its guarantee.
type KMResult struct {
	Method       string  `json:"method"`
	Mechanism    string  `json:"mechanism"`
	Epsilon      float64 `json:"epsilon"`
	Guarantee    string  `json:"guarantee"`
	Neighbouring string  `json:"neighbouring"`
	// EpsilonTotal is the loss of the whole release where it differs from
	// Epsilon (LNTE: Epsilon per (cohort, time point) times the number
	// of time points plus one); otherwise equal to Epsilon.
	EpsilonTotal float64 `json:"epsilon_total"`
	BinWidth     float64 `json:"bin_width"`
	// N is the released (noisy) number of records over all cohorts.
	N       float64    `json:"n"`
	Cohorts []CohortKM `json:"cohorts"`
	// Overall is the curve of all cohorts pooled (from the same noisy
	// cells: post-processing).
	Overall CohortKM `json:"overall"`
	// LogRank and Pairwise compare the cohorts from the post-processed
	// counts (P is NaN where a test is undefined).
	LogRank  survival.LogRank    `json:"logrank"`
	Pairwise []survival.Pairwise `json:"pairwise"`
	// LogRankNote says why LogRank is NaN when the test failed (a singular
	// variance matrix); empty otherwise.
	LogRankNote string `json:"logrank_note,omitempty"`
	// LogRankCalibration describes how LogRank.P and Pairwise[].P were
	// obtained (logrank_dp.go); LogRankNaiveP and PairwiseNaiveP are the
	// chi-square p-values that treat the noisy counts as exact (misleading
	// under noise; for comparison only).
	LogRankCalibration string    `json:"logrank_calibration"`
	LogRankNaiveP      float64   `json:"logrank_naive_p"`
	PairwiseNaiveP     []float64 `json:"pairwise_naive_p,omitempty"`
	// LogRankPFloor is the smallest p-value the Monte-Carlo calibration
	// can give, 1 / (1 + sims) (0 without one): a p at the floor means no
	// simulated release reached the observed statistic, so it is a bound
	// (p <= floor), released as p_upper (PValueBound), never as p.
	LogRankPFloor float64 `json:"-"`
	// countNoiseSD is the standard deviation of one cohort's noisy record
	// count (public; 0 where not modelled).
	countNoiseSD float64
}

// discreteLaplaceVariance is the variance 2a/(1-a)^2, a = exp(-1/scale), of
// the two-sided geometric distribution.
func discreteLaplaceVariance(scale float64) float64 {
	if scale <= 0 {
		return 0
	}
	a := math.Exp(-1 / scale)
	return 2 * a / ((1 - a) * (1 - a))
}

// NoisyHistogramKM is the main private Kaplan–Meier (mechanisms.md §3,
// DPTime style): every (cohort, bin) event and censoring count of h gets
// independent two-sided geometric noise of scale 1/epsilon. One record sits in
// exactly one cell, so under add/remove-one the histogram has L1
// sensitivity 1 (KMCellSensitivity) and the whole release — all cohorts,
// curves, medians, log-rank tests, the noisy record count — is epsilon-DP
// under add/remove-one (2 epsilon under replace-one); everything after the
// noise is post-processing.
//
// Post-processing keeps the noise signed until the end, because clamping
// each noisy event count at zero adds about scale/2 phantom events per bin
// and, over thousands of bins, drives S to zero. Per cohort:
//
//  1. at-risk n_b = N_hat - sum_{b'<b} (d_b' + c_b'), N_hat the sum of the
//     noisy cells, made non-increasing by pool-adjacent-violators and
//     clamped at 0;
//  2. signed hazards h_b = d_b / n_b, S_raw = prod (1 - h_b) (a factor is
//     floored at 0 only if a noisy count exceeds the at-risk number), the
//     curve truncated per KMOptions.MaxNoiseStdErr or where n_b reaches 0;
//  3. monotonicity restored once: isotonic (non-increasing) regression of
//     S_raw by pool-adjacent-violators, clamped into [0, 1];
//  4. consistent counts from the final curve: d_b = n_b (1 - S_b/S_{b-1}),
//     censorings c_b chosen so that n_{b+1} = n_b - d_b - c_b follows the
//     monotone at-risk estimate, 0 <= c_b; the remainder at the end of the
//     curve is censored there. So 0 <= d_b <= n_b, and
//     survival.KaplanMeierFromCounts on these counts gives back exactly the
//     post-processed curve, its Greenwood interval and R's median rules.
//
// Bin width trade-off: every cell carries noise of variance about
// 2/epsilon^2 (exactly 2a/(1-a)^2, a = exp(-epsilon)). Over a stretch of B
// bins with about n at risk, the event-count noise adds a standard deviation
// of about sqrt(2 B)/(epsilon n) to log S, and the at-risk estimate of a bin
// carries the noise of every bin after it (SD about sqrt(4 B_after)/epsilon).
// Halving the bin width doubles B; coarser bins lose time resolution (a bin's
// events are reported at its start, so the curve is early by less than one
// bin width). Choose the width so that sqrt(2 B)/(epsilon n) is small where
// the curve matters: for flchain cohorts (n about 650) over 5400 days at
// epsilon = 1, 1-day bins give about 0.16 (the curves are truncated early)
// and 30-day bins about 0.03 (at the replace-one calibration of scale
// 2/epsilon, twice these, the tests measured a mean sup error of 0.08).
func NoisyHistogramKM(h *Histogram, src dp.Source, opts KMOptions) (KMResult, error) {
	o, err := centralOptions(h, src, opts)
	if err != nil {
		return KMResult{}, fmt.Errorf("noisy-histogram km: %w", err)
	}
	ev, ce, err := noisyCells(h, src, o.Epsilon)
	if err != nil {
		return KMResult{}, fmt.Errorf("noisy-histogram km: %w", err)
	}
	scale := KMCellSensitivity / o.Epsilon
	cellVar := 0.0
	res := KMResult{
		Method:       MethodNoisyHistogramKM,
		Epsilon:      o.Epsilon,
		EpsilonTotal: o.Epsilon,
		Guarantee:    GuaranteePureDP,
		Neighbouring: NeighbouringAddRemove,
		BinWidth:     h.BinWidth,
		Mechanism: fmt.Sprintf("two-sided geometric noise, scale 1/epsilon = %g, on every (cohort, bin) event and censoring count "+
			"(L1 sensitivity 1 under add/remove-one); signed post-processing, isotonic curve", scale),
	}
	if math.IsInf(o.Epsilon, 1) {
		res.Guarantee = GuaranteeNone
		res.Mechanism = "exact histogram (no noise)"
	} else {
		cellVar = discreteLaplaceVariance(scale)
	}
	res.countNoiseSD = math.Sqrt(2 * float64(h.Bins) * cellVar)
	if err := fillKMResult(&res, h, ev, ce, cellVar, o); err != nil {
		return KMResult{}, fmt.Errorf("noisy-histogram km: %w", err)
	}
	refit := func(hs *Histogram, src dp.Source, os KMOptions) (KMResult, error) {
		return NoisyHistogramKM(hs, src, os)
	}
	if err := simulateNoiseSD(&res, h, o, refit); err != nil {
		return KMResult{}, fmt.Errorf("noisy-histogram km: %w", err)
	}
	if err := calibrateLogRank(&res, h, o, refit); err != nil {
		return KMResult{}, fmt.Errorf("noisy-histogram km: %w", err)
	}
	return res, nil
}

// noisyCells returns h's event and censoring counts plus independent
// two-sided geometric noise of scale 1/epsilon per cell (none for +Inf).
func noisyCells(h *Histogram, src dp.Source, epsilon float64) (ev, ce [][]float64, err error) {
	k, bins := h.Cohorts(), h.Bins
	ev = make([][]float64, k)
	ce = make([][]float64, k)
	exact := math.IsInf(epsilon, 1)
	var lap dp.LaplaceSampler
	if !exact {
		if lap, err = dp.NewLaplaceSampler(KMCellSensitivity / epsilon); err != nil {
			return nil, nil, err
		}
	}
	for c := 0; c < k; c++ {
		ev[c] = make([]float64, bins)
		ce[c] = make([]float64, bins)
		for b := 0; b < bins; b++ {
			var de, dc int64
			if !exact {
				de, dc = lap.Draw(src), lap.Draw(src)
			}
			ev[c][b] = float64(h.Events[c][b] + de)
			ce[c][b] = float64(h.Censor[c][b] + dc)
		}
	}
	return ev, ce, nil
}

// fillKMResult draws the per-cohort and pooled curves and the log-rank
// tests from signed cells (ev, ce [cohort][bin]) whose event cells carry
// noise of variance cellVar (a constant) into res.
func fillKMResult(res *KMResult, h *Histogram, ev, ce [][]float64, cellVar float64, o KMOptions) error {
	return fillKMResultNoise(res, h, ev, ce, func(pooled int) logSNoise {
		v := cellVar * float64(pooled)
		return &cellNoise{eventVar: func(int) float64 { return v }}
	}, o)
}

// fillKMResultNoise is fillKMResult with a general noise model: noise(1)
// returns a fresh model of one cohort's event-count noise, noise(k) that of
// the sum of k cohorts (the pooled curve; the cohorts' noise is
// independent).
func fillKMResultNoise(res *KMResult, h *Histogram, ev, ce [][]float64, noise func(pooled int) logSNoise, o KMOptions) error {
	k := len(ev)
	private := !math.IsInf(o.Epsilon, 1)
	res.Cohorts = make([]CohortKM, k)
	for c := 0; c < k; c++ {
		ck, err := kmFromSignedCellsNoise(ev[c], ce[c], noise(1), h.BinWidth, o)
		if err != nil {
			return fmt.Errorf("cohort %d: %w", c, err)
		}
		ck.Cohort = c
		if private {
			flagLowInformation(&ck, res.countNoiseSD)
		}
		res.Cohorts[c] = ck
	}
	if o.countsOnly {
		if !o.noLogRank {
			attachLogRank(res)
		}
		return nil
	}
	pe, pc := poolCells(ev), poolCells(ce)
	ov, err := kmFromSignedCellsNoise(pe, pc, noise(k), h.BinWidth, o)
	if err != nil {
		return fmt.Errorf("pooled curve: %w", err)
	}
	ov.Cohort = -1
	if private {
		flagLowInformation(&ov, res.countNoiseSD*math.Sqrt(float64(k)))
	}
	res.Overall = ov
	res.N = ov.N
	if !o.noLogRank {
		attachLogRank(res)
	}
	return nil
}

func poolCells(x [][]float64) []float64 {
	out := make([]float64, len(x[0]))
	for _, row := range x {
		for b, v := range row {
			out[b] += v
		}
	}
	return out
}

// logSNoise models how the noise of the event counts enters log S, for the
// truncation rule of KMOptions.MaxNoiseStdErr and CohortKM.NoiseStdErr. It
// is computed from public noise variances and the (noisy, post-processed)
// at-risk numbers only.
type logSNoise interface {
	// add is called for b = 0, 1, ... in order with bin b's at-risk number
	// m > 0. It returns the variance of the noise of
	// sum_{b' <= b} d_b' / m_b' (the first-order noise of log S through
	// bin b) and the variance of bin b's own term d_b / m_b.
	add(b int, m float64) (cum, own float64)
}

// logSBiasCorrected is implemented by noise models whose product-limit
// factors are corrected for the second-order bias of the noise:
// E log(1 - (d + e)/m) ~ log(1 - d/m) - Var(e)/(2 m^2), so each factor is
// multiplied by factor(own), own = Var(e_b)/m_b^2 from add.
type logSBiasCorrected interface {
	factor(own float64) float64
}

// cellNoise is the model of independent noise per cell: eventVar(b) is the
// variance of ev[b]'s noise.
type cellNoise struct {
	eventVar func(b int) float64
	v        float64
}

func (c *cellNoise) add(b int, m float64) (cum, own float64) {
	own = c.eventVar(b) / (m * m)
	c.v += own
	return c.v, own
}

// kmFromSignedCells is the post-processing of NoisyHistogramKM (steps 1-4)
// for one curve. ev and ce are signed (noisy or debiased) event and
// censoring counts per bin; eventVar(b) is the variance of ev[b]'s noise.
func kmFromSignedCells(ev, ce []float64, eventVar func(b int) float64, binWidth float64, o KMOptions) (CohortKM, error) {
	return kmFromSignedCellsNoise(ev, ce, &cellNoise{eventVar: eventVar}, binWidth, o)
}

// kmFromSignedCellsNoise is kmFromSignedCells with a general model of the
// event-count noise (correlated across bins for HierarchicalKM).
func kmFromSignedCellsNoise(ev, ce []float64, noise logSNoise, binWidth float64, o KMOptions) (CohortKM, error) {
	bins := len(ev)
	// 1. monotone at-risk estimate
	m := make([]float64, bins+1)
	acc := 0.0
	for b := bins - 1; b >= 0; b-- {
		acc += ev[b] + ce[b]
		m[b] = acc
	}
	nHat := acc
	isotonicNonIncreasing(m[:bins])
	// at risk within [0, max(N_hat, 0)]: the released n (the noisy count)
	// is the first at-risk number, and no later bin exceeds it (pooling
	// can only raise the first value above N_hat). (The builtin min and
	// max here and below, inlined, give math.Min's and math.Max's bits:
	// they differ only where a NaN meets -Inf (min) or +Inf (max), and
	// one argument is a constant or both are at-risk numbers >= 0.)
	for b := range m {
		m[b] = min(max(m[b], 0), max(nHat, 0))
	}
	// 2. signed product-limit curve, truncated
	sRaw := make([]float64, 0, bins)
	keepSD := !o.countsOnly && !o.survOnly // the rows' NoiseStdErr
	var noiseSD []float64
	if keepSD {
		noiseSD = make([]float64, 0, bins)
	}
	s, v := 1.0, 0.0
	end := bins
	bc, corrected := noise.(logSBiasCorrected)
	for b := 0; b < bins; b++ {
		if !(m[b] > 0) {
			end = b
			break
		}
		nv, bv := noise.add(b, m[b])
		if math.Sqrt(nv) > o.MaxNoiseStdErr || math.Sqrt(bv) > o.MaxNoiseStdErr/2 {
			end = b
			break
		}
		v = nv
		f := 1 - ev[b]/m[b]
		if f < 0 {
			f = 0
		}
		if corrected {
			f *= bc.factor(bv)
		}
		s *= f
		sRaw = append(sRaw, s)
		if keepSD {
			noiseSD = append(noiseSD, math.Sqrt(v))
		}
	}
	// 3. isotonic regression, clamp
	isotonicNonIncreasing(sRaw)
	for b := range sRaw {
		sRaw[b] = min(1, max(0, sRaw[b]))
	}
	// 4. consistent counts
	out := CohortKM{N: m[0], nHat: nHat, TruncatedAt: math.NaN()}
	if !o.survOnly {
		out.BinNRisk, out.BinNEvent = make([]float64, bins), make([]float64, bins)
	}
	noBand(&out)
	if end < bins {
		out.TruncatedAt = float64(end) * binWidth
	}
	var tm, nr, ne, nc, nsd []float64
	var sv survOnlyCurve
	switch {
	case o.survOnly:
		sv = newSurvOnlyCurve(end)
	case !o.countsOnly: // at most one row per bin up to end: sized once, not grown
		tm, nr, ne, nc, nsd = make([]float64, 0, end), make([]float64, 0, end), make([]float64, 0, end), make([]float64, 0, end), make([]float64, 0, end)
	}
	private := !math.IsInf(o.Epsilon, 1)
	n, prev := 0.0, 1.0
	if end > 0 {
		n = m[0]
	}
	for b := 0; b < end; b++ {
		d := 0.0
		if prev > 0 && sRaw[b] < prev {
			d = n * (1 - sRaw[b]/prev)
			d = min(max(d, 0), n)
			if d < kmSnap*max(1, n) {
				d = 0 // rounding residue, not an event
			}
		}
		target := 0.0
		if b+1 < end {
			target = m[b+1]
		}
		// censor so that the next at-risk number follows the monotone
		// estimate: n_{b+1} = clamp(target, 0, n - d)
		rem, c, next := n-d, 0.0, n-d
		switch {
		case target <= 0:
			c, next = rem, 0
		case target < rem:
			c, next = rem-target, target
		}
		if c > 0 && c < kmSnap*max(1, rem) {
			c, next = 0, rem
		}
		if !o.survOnly {
			out.BinNRisk[b], out.BinNEvent[b] = n, d
		}
		// a private curve has a row in every bin it covers: its noise grows
		// bin by bin even where no event or censoring is left after the
		// post-processing, and the interval must show it
		switch {
		case !(d > 0 || c > 0 || private) || o.countsOnly:
		case o.survOnly:
			sv.row(n, d, c)
		default:
			tm = append(tm, float64(b)*binWidth)
			nr = append(nr, n)
			ne = append(ne, d)
			nc = append(nc, c)
			nsd = append(nsd, noiseSD[b])
		}
		n = next
		prev = sRaw[b]
	}
	switch {
	case o.countsOnly:
		return out, nil
	case o.survOnly:
		if sv.bad >= 0 {
			return CohortKM{}, fmt.Errorf("kaplan-meier from counts: row %d: need finite counts with 0 <= n_event <= n_risk and n_censor >= 0", sv.bad)
		}
		out.Curve = survival.KMCurve{Surv: sv.surv, Median: math.NaN(), MedianLower: math.NaN(), MedianUpper: math.NaN(), Conf: o.Conf}
		return out, nil
	}
	if len(tm) == 0 {
		out.Curve = emptyCurve(o.Conf)
		if o.noIntervals {
			return out, nil
		}
		if err := applyNoiseAwareIntervals(&out, o, binWidth, private); err != nil {
			return CohortKM{}, err
		}
		return out, nil
	}
	curve, err := survival.KaplanMeierFromCounts(tm, nr, ne, nc, o.Conf)
	if err != nil {
		return CohortKM{}, err
	}
	out.Curve = curve
	out.NoiseStdErr = nsd
	if o.noIntervals {
		return out, nil
	}
	if err := applyNoiseAwareIntervals(&out, o, binWidth, private); err != nil {
		return CohortKM{}, err
	}
	return out, nil
}

// kmSnap is the relative size below which a derived count is rounding
// residue of the floating-point post-processing and is set to 0.
const kmSnap = 1e-9

func emptyCurve(conf float64) survival.KMCurve {
	return survival.KMCurve{
		Time: []float64{}, NRisk: []float64{}, NEvent: []float64{}, NCensor: []float64{},
		Surv: []float64{}, StdErr: []float64{}, Lower: []float64{}, Upper: []float64{},
		Median: math.NaN(), MedianLower: math.NaN(), MedianUpper: math.NaN(), Conf: conf,
	}
}

// isotonicNonIncreasing replaces y by its least-squares non-increasing fit
// (pool adjacent violators, unit weights) in place.
func isotonicNonIncreasing(y []float64) {
	if len(y) < 2 {
		return
	}
	type block struct {
		sum   float64
		count int
	}
	// on the stack up to 256 blocks (a monotone run keeps one block per
	// value: the at-risk column of a 150-bin curve has about 150); longer
	// inputs grow onto the heap
	blocks := make([]block, 0, 256)
	for _, v := range y {
		blocks = append(blocks, block{v, 1})
		for len(blocks) > 1 {
			last := blocks[len(blocks)-1]
			prev := blocks[len(blocks)-2]
			// violation: the earlier block's mean is below the later one's
			if prev.sum*float64(last.count) >= last.sum*float64(prev.count) {
				break
			}
			blocks = blocks[:len(blocks)-2]
			blocks = append(blocks, block{prev.sum + last.sum, prev.count + last.count})
		}
	}
	i := 0
	for _, bl := range blocks {
		mean := bl.sum / float64(bl.count)
		for j := 0; j < bl.count; j++ {
			y[i] = mean
			i++
		}
	}
}
