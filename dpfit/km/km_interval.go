package km

import (
	"math"
	"math/rand/v2"
	"sort"
)

// The pointwise interval of a private KM curve (issue 12).
//
// The released log S = l is off from the truth by sampling error and by
// the privacy noise, independent of each other. The interval combines
//
//   - sampling: Greenwood's SE g of log S, on the complementary log-log
//     scale (the interval S^exp(+/- z g / |log S|) of Borgan and Liestøl
//     1990), which keeps its level where S is near 1 and events are few,
//     where the log interval (R's default) falls short: on flchain
//     bootstrap samples of ~650 records R's log interval covers 0.928 at
//     one year, the log-log one 0.951;
//   - noise: the spread of log S over curves simulated by running the
//     mechanism again on the released counts (simulateNoiseSD), separately
//     below and above the released curve: sd_down and sd_up, the root mean
//     square of the simulated deviations on each side (a deviation of 0
//     counts half on each side), or the first-order analytic SD on both
//     sides where there is no simulation. The noise of log S is skewed
//     early in the curve (the isotonic step and the clamp at 1 near the
//     curve's start): the released curve is too high more often and by
//     more than too low, and the simulated curves around it deviate
//     downward more than upward — the mirror image, so the interval's
//     lower side takes sd_down (a percentile-type orientation). Measured
//     at one year, epsilon 0.5, on the full-tier TestKMCoverage seeds: the
//     symmetric RMS on both sides covered 0.926, the basic-bootstrap
//     orientation (lower side from sd_up) 0.858, this one 0.951; the
//     simulated quantiles themselves (100 simulations) about 0.90;
//
// combined on the log S scale by the MOVER rule (Zou and Donner 2008):
// each side's sampling half-width and z times that side's noise SD add in
// quadrature. std_err stays sqrt(g^2 + noise_std_err^2) (the SE of log S,
// R's meaning). With no noise the interval is the log-log Greenwood one.

// moverInterval is the interval for S of a release with log S = l,
// Greenwood SE g of log S and noise SDs nseUp (above the released curve)
// and nseDown (below it) of log S: the log-log Greenwood limits of the
// sampling part and z times the noise SD of each side, combined on the log
// S scale by the MOVER rule (each side's half-widths in quadrature). The
// lower limit takes nseDown, the upper nseUp (see above). The upper limit
// is at most 1.
func moverInterval(l, g, nseDown, nseUp, z float64) (lower, upper float64) {
	dl, du := 0.0, 0.0
	if l < 0 && g > 0 {
		a := math.Exp(z * g / -l)
		dl, du = l-l*a, l/a-l // log S - log lower, log upper - log S
	}
	zd, zu := z*nseDown, z*nseUp
	lower = math.Exp(l - math.Sqrt(dl*dl+zd*zd))
	upper = math.Min(math.Exp(l+math.Sqrt(du*du+zu*zu)), 1)
	return lower, upper
}

// The simultaneous band (issue 12): an equal-precision band on log S,
//
//	S exp(-/+ c x std_err) over the released times in [BandFrom, BandTo],
//
// where std_err = sqrt(greenwood^2 + noise^2) and c is the conf-quantile of
// sup |D(t)| / std_err(t) over that range for simulated deviations D of
// log S: each simulated noise curve of simulateNoiseSD (the mechanism run
// again on the released counts: its deviation path from the released
// curve, correlated across bins as the mechanism makes it) plus bandPaths
// independent sampling paths with Greenwood's independent increments
// (variance g_i^2 - g_{i-1}^2 per row; the KM's martingale structure).
// Post-processing of the released values. The range starts at the first
// released time by which the curve has released bandMinEvents events and ends before the noise-dominated tail
// (NoiseDominatedFrom), before the first bin that fewer than bandShare of
// the simulated curves reach, and at the end of the curve.
const (
	BandMethodSimulated = "equal-precision band on log S: S exp(-/+ c std_err), c the simulated conf-quantile of sup |deviation| / std_err over [band_from, band_to] (mechanism rerun on the released counts plus Greenwood sampling paths)"
	BandMethodNone      = "none: no simulation of the mechanism for this release (interval_sims < 0 or method without one), or no released time before the noise-dominated tail"
	// bandPaths is the number of sampling paths per simulated noise curve.
	bandPaths = 5
	// bandMinEvents: the band starts at the first released time by which
	// the curve has released this many events (before, the few events make
	// the deviations far from normal).
	bandMinEvents = 10
	// bandShare: the band stops before the first bin that fewer than this
	// share of the simulated curves reach.
	bandShare = 0.95
)

// noBand marks ck as having no simultaneous band.
func noBand(ck *CohortKM) {
	ck.BandLower, ck.BandUpper = nil, nil
	ck.BandFrom, ck.BandTo, ck.BandCritical = math.NaN(), math.NaN(), math.NaN()
	ck.BandMethod = BandMethodNone
}

// simultaneousBand computes ck's band from the simulated deviations
// dev[row][run] (NaN where a run does not reach the row; nil rows not
// simulated), reach[row] runs reaching each row, out of sims.
func simultaneousBand(ck *CohortKM, dev [][]float64, reach []int, sims int, rng *rand.Rand) {
	noBand(ck)
	cv := ck.Curve
	start, cum := 0, 0.0
	for start < len(cv.Time) {
		cum += cv.NEvent[start]
		if cum >= bandMinEvents {
			break
		}
		start++
	}
	end := start
	for end < len(cv.Time) {
		i := end
		if dev[i] == nil || float64(reach[i]) < bandShare*float64(sims) || !(cv.Surv[i] > 0) || !(cv.StdErr[i] > 0) ||
			(!math.IsNaN(ck.NoiseDominatedFrom) && cv.Time[i] >= ck.NoiseDominatedFrom) {
			break
		}
		end++
	}
	if end == start {
		return
	}
	inc := make([]float64, end)
	prev := 0.0
	for i := range inc {
		g := ck.SamplingStdErr[i]
		inc[i] = math.Sqrt(math.Max(g*g-prev, 0))
		prev = math.Max(prev, g*g)
	}
	sups := make([]float64, 0, sims*bandPaths)
	for r := 0; r < sims; r++ {
		for p := 0; p < bandPaths; p++ {
			w, sup := 0.0, 0.0
			for i := 0; i < end; i++ {
				w += inc[i] * rng.NormFloat64()
				if i < start {
					continue
				}
				d := dev[i][r]
				if math.IsNaN(d) {
					break
				}
				sup = fmax(sup, math.Abs(d+w)/cv.StdErr[i])
			}
			sups = append(sups, sup)
		}
	}
	sort.Float64s(sups)
	c := sups[min(int(math.Ceil(cv.Conf*float64(len(sups))))-1, len(sups)-1)]
	ck.BandLower = make([]float64, len(cv.Time))
	ck.BandUpper = make([]float64, len(cv.Time))
	for i := range cv.Time {
		if i < start || i >= end {
			ck.BandLower[i], ck.BandUpper[i] = math.NaN(), math.NaN()
			continue
		}
		e := math.Exp(c * cv.StdErr[i])
		ck.BandLower[i] = cv.Surv[i] / e
		ck.BandUpper[i] = math.Min(cv.Surv[i]*e, 1)
	}
	ck.BandFrom, ck.BandTo, ck.BandCritical = cv.Time[start], cv.Time[end-1], c
	ck.BandMethod = BandMethodSimulated
}
