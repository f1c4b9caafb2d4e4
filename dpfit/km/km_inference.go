package km

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsurv/dpsurv/dpfit"
)

// Noise-aware inference for the private Kaplan–Meier releases (issue 12).
//
// A private curve is off from the truth for two reasons: sampling (the
// records are a sample: Greenwood's variance) and the privacy noise (the
// release's own NoiseStdErr, computed from public noise variances and the
// released at-risk numbers). The two are independent, so the variance of
// log S is their sum, and std_err carries sqrt(greenwood^2 + noise^2)
// (R's meaning: the standard error of log S). The released interval
// (km_interval.go) combines the log-log Greenwood interval with the noise's
// SD below and above the curve (MOVER); the Greenwood-only log interval
// (R's) stays beside it as SamplingStdErr, SamplingLower and
// SamplingUpper. With no noise (epsilon = +Inf) the release is R's
// survfit, log interval included.
//
// Medians. A private median is released only where the data support one:
// the curve reaches 0.5 AND its upper confidence limit does (so the data
// establish that S falls below 0.5 inside the released curve) AND the
// window is not low-information; otherwise the median and its upper limit
// are null and MedianNote says why. Released times are bin starts (a bin's
// events are reported at its start), so the median's upper limit is the END
// of the bin in which the upper curve reaches 0.5: the true median of a
// crossing inside that bin is before it.
//
// Noise-dominated tail: NoiseDominatedFrom is the first released time from
// which the standard deviation of S due to the noise alone, S x
// NoiseStdErr, exceeds KMOptions.NoiseTailSD (public; default
// DefaultNoiseTailSD). Plots and analysts should treat the curve after it
// as indicative only.
//
// Low information: a cohort whose noisy record count N_hat (the sum of its
// released cells, before any clamping) is below max(MinInformativeN,
// LowInformationSDs x SD(N_hat)) is flagged LowInformation: the curve is
// still released (windows are released on the clock so that emptiness is
// not revealed), but no median. SD(N_hat) is a public function of the
// mechanism's noise scales. An empty window is flagged unless the noise of
// N_hat exceeds LowInformationSDs of its standard deviations.

// Public thresholds of the inference rules.
const (
	// DefaultKMBins is the number of bins the default bin width gives over
	// the public time bound (DefaultBinWidth).
	DefaultKMBins = 150
	// DefaultNoiseTailSD is the default of KMOptions.NoiseTailSD.
	DefaultNoiseTailSD = 0.05
)

// Median notes (CohortKM.MedianNote).
const (
	MedianNoteNotReached = "the curve does not reach 0.5 within the released times"
	MedianNoteUpperAbove = "the upper confidence limit of S stays above 0.5 within the released times: the data do not establish a median"
	MedianNoteLowInfo    = "low-information window: the noisy record count is below the public threshold"
	MedianNoteEmptyCurve = "no curve released"
)

// DefaultBinWidth is the default KM bin width for the public time bound:
// timeMax / DefaultKMBins (1 when timeMax is not positive). On flchain
// (about 650 records per cohort over 5215 days) at epsilon 1 the error of
// the hierarchical release is flat between about 100 and 200 bins and
// doubles at 1-day bins (docs/analysts.md, "Choosing the bin width").
func DefaultBinWidth(timeMax float64) float64 {
	if !(timeMax > 0) || math.IsInf(timeMax, 0) {
		return 1
	}
	return timeMax / DefaultKMBins
}

// applyNoiseAwareIntervals replaces ck's Greenwood interval by the
// noise-aware one (keeping the Greenwood values under the Sampling names),
// recomputes the median limits from it and applies the median rule and the
// noise-tail mark. private is false for the exact (epsilon = +Inf) path,
// which keeps R's median rules.
func applyNoiseAwareIntervals(ck *CohortKM, o KMOptions, binWidth float64, private bool) error {
	cv := &ck.Curve
	n := len(cv.Time)
	if ck.SamplingStdErr == nil {
		ck.SamplingStdErr = append([]float64{}, cv.StdErr...)
		ck.SamplingLower = append([]float64{}, cv.Lower...)
		ck.SamplingUpper = append([]float64{}, cv.Upper...)
	}
	ck.NoiseDominatedFrom = math.NaN()
	ck.MedianNote = ""
	if n == 0 {
		if private {
			ck.MedianNote = MedianNoteEmptyCurve
		}
		return nil
	}
	z := math.Sqrt2 * math.Erfinv(cv.Conf)
	tail := o.NoiseTailSD
	if tail == 0 {
		tail = DefaultNoiseTailSD
	}
	for i := 0; i < n; i++ {
		nse := 0.0
		if i < len(ck.NoiseStdErr) {
			nse = ck.NoiseStdErr[i]
		}
		g := ck.SamplingStdErr[i]
		se := math.Sqrt(g*g + nse*nse)
		cv.StdErr[i] = se
		s := cv.Surv[i]
		switch {
		case s == 0 || math.IsNaN(s):
			cv.Lower[i], cv.Upper[i] = math.NaN(), math.NaN()
		case !private:
			// R's conf.type = "log" (se = greenwood)
			e := math.Exp(z * se)
			cv.Lower[i] = s / e
			cv.Upper[i] = math.Min(s*e, 1)
		default:
			down, up := nse, nse
			if i < len(ck.noiseSemi) {
				down, up = ck.noiseSemi[i][0], ck.noiseSemi[i][1]
			}
			cv.Lower[i], cv.Upper[i] = moverInterval(math.Log(s), g, down, up, z)
		}
		if math.IsNaN(ck.NoiseDominatedFrom) && s*nse > tail {
			ck.NoiseDominatedFrom = cv.Time[i]
		}
	}
	q, lo, hi, err := cv.Quantile(0.5)
	if err != nil {
		return fmt.Errorf("median: %w", err)
	}
	cv.Median, cv.MedianLower, cv.MedianUpper = q, lo, hi
	if !private {
		return nil
	}
	switch {
	case math.IsNaN(q):
		ck.MedianNote = MedianNoteNotReached
		cv.MedianUpper = math.NaN()
	case math.IsNaN(hi):
		ck.MedianNote = MedianNoteUpperAbove
		cv.Median = math.NaN()
	default:
		cv.MedianUpper = hi + binWidth
	}
	return nil
}

// flagLowInformation marks ck when its noisy record count is below the
// public threshold for a count noise of standard deviation sd; a flagged
// cohort releases no median.
func flagLowInformation(ck *CohortKM, sd float64) {
	if sd > 0 || ck.LowInformationThreshold == 0 {
		ck.LowInformationThreshold = dpfit.LowInformationThreshold(sd)
	}
	if !(ck.nHat < ck.LowInformationThreshold) {
		return
	}
	ck.LowInformation = true
	ck.LowInformationReason = fmt.Sprintf("noisy record count below the public threshold %.3g (max(%d, %d SD of the count's noise)): the curve is dominated by noise; no median released",
		ck.LowInformationThreshold, dpfit.MinInformativeN, dpfit.LowInformationSDs)
	ck.Curve.Median, ck.Curve.MedianLower, ck.Curve.MedianUpper = math.NaN(), math.NaN(), math.NaN()
	ck.MedianNote = MedianNoteLowInfo
}

// DefaultIntervalSims is the default number of simulated releases behind
// the noise standard deviations of the intervals (KMOptions.IntervalSims),
// for histograms of up to 4096 cells (bins x cohorts); larger ones get
// proportionally fewer, at least 20.
const DefaultIntervalSims = 100

// minSimShare: a bin's simulated SD is used when at least this share of
// the simulated curves reach it (otherwise the first-order analytic SD).
const minSimShare = 0.5

// simulateNoiseSD replaces the first-order noise SD of log S of every
// private curve of res by the SD observed when the mechanism is run again
// on the released counts (a parametric bootstrap of the noise: the
// released, consistent counts are rounded into a histogram and released
// again by fit, same public noise scales and post-processing; the SD of
// log S over the simulated curves is taken bin by bin), then redraws the
// intervals and medians. Post-processing: it uses the released values and
// public parameters only.
//
// Why: the first-order SD (sum of the event-noise variances over the
// squared at-risk numbers) ignores the isotonic regression and the clamp at
// 1, which shrink the noise where the curve is flat: on flchain at epsilon
// 0.5 it is twice the real SD at one year (0.033 against 0.017), so the
// intervals over-cover (0.99); from about 5 years on the two agree. The
// simulation's randomness is seeded from the released counts (releaseSeed),
// so the interval is a reproducible function of the release.
func simulateNoiseSD(res *KMResult, h *Histogram, o KMOptions, fit releaseFunc) error {
	sims := o.IntervalSims
	if sims == 0 {
		sims = defaultSims(DefaultIntervalSims, 20, h.Bins*len(res.Cohorts))
	}
	if sims < 0 || math.IsInf(o.Epsilon, 1) {
		return nil
	}
	k := len(res.Cohorts)
	hs, err := NewHistogram(h.BinWidth, h.TMax, k)
	if err != nil {
		return fmt.Errorf("interval simulation: %w", err)
	}
	for c, ck := range res.Cohorts {
		releasedCounts(ck, hs.Events[c], hs.Censor[c])
	}
	seed := releaseSeed(res)
	seed[0] ^= 0x5a // a different stream from the log-rank calibration's
	src := rand.NewChaCha8(seed)
	so := o
	so.naiveLogRank, so.noLogRank, so.IntervalSims, so.LogRankSims = true, true, -1, -1
	so.noIntervals = true // only the simulated curves' S is used
	so.survOnly = true
	bins := h.Bins
	// logs[c][r][b]: log S of simulated curve c (k: pooled) of run r in
	// bin b (NaN where it does not reach b), rows of one backing array
	logs := make([][][]float64, k+1)
	cells := make([]float64, (k+1)*sims*bins)
	for i := range cells {
		cells[i] = math.NaN()
	}
	for c := range logs {
		logs[c] = make([][]float64, sims)
		for r := range logs[c] {
			logs[c][r], cells = cells[:bins:bins], cells[bins:]
		}
	}
	record := func(c, r int, ck CohortKM) {
		row := logs[c][r]
		for b, s := range ck.Curve.Surv {
			if b >= bins || !(s > 0) {
				break
			}
			row[b] = math.Log(s)
		}
	}
	for r := 0; r < sims; r++ {
		rs, err := fit(hs, src, so)
		if err != nil {
			return fmt.Errorf("interval simulation: %w", err)
		}
		for c := range rs.Cohorts {
			record(c, r, rs.Cohorts[c])
		}
		record(k, r, rs.Overall)
	}
	brng := rand.New(src)
	apply := func(ck *CohortKM, runs [][]float64) error {
		if len(ck.Curve.Time) == 0 {
			return nil
		}
		rows := len(ck.Curve.Time)
		// dev[i][r]: deviation of run r's log S from the released one in
		// row i (a private curve has one row per bin from bin 0)
		dev := make([][]float64, rows)
		reach := make([]int, rows)
		var semi [][2]float64
		for i := range dev {
			s0 := ck.Curve.Surv[i]
			if i >= len(ck.NoiseStdErr) || i >= bins || !(s0 > 0) {
				continue
			}
			l0 := math.Log(s0)
			d := make([]float64, sims)
			s2, sp, np := 0.0, 0.0, 0.0
			for r := range runs {
				d[r] = runs[r][i] - l0
				if !math.IsNaN(d[r]) {
					reach[i]++
					s2 += d[r] * d[r]
					switch {
					case d[r] > 0:
						sp += d[r] * d[r]
						np++
					case d[r] == 0:
						np += 0.5
					}
				}
			}
			if float64(reach[i]) < minSimShare*float64(sims) {
				continue
			}
			// root mean square around the simulation's own truth, the
			// released log S: the noise's spread and the post-processing's
			// bias
			ck.NoiseStdErr[i] = math.Sqrt(s2 / float64(reach[i]))
			if semi == nil {
				semi = make([][2]float64, rows)
				for j := range semi {
					if j < len(ck.NoiseStdErr) {
						semi[j] = [2]float64{ck.NoiseStdErr[j], ck.NoiseStdErr[j]}
					}
				}
			}
			// below and above the released curve: the root mean square of
			// the deviations on each side (a deviation of 0 counts half on
			// each); a side without deviations has none
			nm := float64(reach[i]) - np
			semi[i] = [2]float64{0, 0}
			if nm > 0 {
				semi[i][0] = math.Sqrt((s2 - sp) / nm)
			}
			if np > 0 {
				semi[i][1] = math.Sqrt(sp / np)
			}
			dev[i] = d
		}
		ck.noiseSemi = semi
		if err := applyNoiseAwareIntervals(ck, o, h.BinWidth, true); err != nil {
			return err
		}
		ck.noiseSemi = nil
		if ck.LowInformation {
			flagLowInformation(ck, 0)
		}
		simultaneousBand(ck, dev, reach, sims, brng)
		return nil
	}
	for c := range res.Cohorts {
		if err := apply(&res.Cohorts[c], logs[c]); err != nil {
			return fmt.Errorf("interval simulation: cohort %d: %w", c, err)
		}
	}
	if err := apply(&res.Overall, logs[k]); err != nil {
		return fmt.Errorf("interval simulation: pooled curve: %w", err)
	}
	return nil
}

// releasedCounts writes a cohort's released per-bin events and censorings,
// rounded, into ev and ce (what remains at the end of the curve is censored
// in its last bin; a cohort without a curve is censored in bin 0).
func releasedCounts(ck CohortKM, ev, ce []int64) {
	bins := len(ev)
	end := 0
	for b := 0; b < bins && b < len(ck.BinNRisk); b++ {
		if ck.BinNRisk[b] > 0 {
			end = b + 1
		}
	}
	for b := range ev {
		ev[b], ce[b] = 0, 0
	}
	if end == 0 {
		ce[0] = int64(math.Round(math.Max(ck.N, 0)))
		return
	}
	for b := 0; b < end; b++ {
		n, d := ck.BinNRisk[b], ck.BinNEvent[b]
		next := 0.0
		if b+1 < end {
			next = ck.BinNRisk[b+1]
		}
		ev[b] = int64(math.Round(d))
		ce[b] = int64(math.Round(math.Max(n-d-next, 0)))
	}
}
