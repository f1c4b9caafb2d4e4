package km

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// LNTE is the baseline of paper 004 (Gondara and Wang's Laplacian Noise
// Time Event), kept for comparisons only. At every time point j of the
// public bin grid, per cohort, the at-risk count r_j and the event count d_j
// each get Laplace noise of scale 2/epsilon (one record changes the pair by
// at most 2 in L1 under replace-one). The noisy counts are then adjusted
// forward in time as the method prescribes: r_j is clamped into
// [0, r_{j-1} - d_{j-1}], d_j into [0, r_j], and the curve is truncated once
// fewer than one subject is left at risk; KM, Greenwood interval and median follow from
// these counts.
//
// Its epsilon is per (cohort, time point), not per release: one record
// enters the at-risk count of every time point up to its own. Under
// replace-one the worst case moves an event between two cohorts' last bins,
// which changes 2B+2 coordinates of the (r, d) vector by one each (B at-risk
// counts and one event count in each cohort): L1 sensitivity 2(B+1), so at
// scale 2/epsilon the release as a whole is only ((B+1) x epsilon)-DP. The
// metadata says so (Guarantee "pure-dp (per cohort and time point)",
// EpsilonTotal = (Bins+1) x Epsilon). The counts are integers, so the
// power-of-two grid noise of dp.Laplace lands on a lattice that contains
// them (no rounding of the data term). Clamping each noisy d_j at zero adds
// phantom events in every bin, which is why its curves collapse (the
// pitfall of mechanisms.md §3).
func LNTE(h *Histogram, src dp.Source, opts KMOptions) (KMResult, error) {
	o, err := histogramOptions(h, opts)
	if err != nil {
		return KMResult{}, fmt.Errorf("lnte: %w", err)
	}
	if !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 0) {
		return KMResult{}, fmt.Errorf("lnte: epsilon must be positive and finite, got %v", o.Epsilon)
	}
	if src == nil {
		return KMResult{}, fmt.Errorf("lnte: nil randomness source")
	}
	k, bins := h.Cohorts(), h.Bins
	scale := 2 / o.Epsilon
	res := KMResult{
		Method:       MethodLNTE,
		Epsilon:      o.Epsilon,
		EpsilonTotal: lnteTotalEpsilon(o.Epsilon, bins),
		Guarantee:    GuaranteePerTimePoint,
		Neighbouring: NeighbouringReplace,
		BinWidth:     h.BinWidth,
		Mechanism: fmt.Sprintf("LNTE baseline: Laplace noise, scale 2/epsilon = %g, on at-risk and event counts at each of %d time points; "+
			"epsilon is per (cohort, time point); the whole release costs (bins+1) x epsilon = %g (moving an event between two cohorts' last bins changes 2 x bins + 2 counts)",
			scale, bins, lnteTotalEpsilon(o.Epsilon, bins)),
	}
	res.Cohorts = make([]CohortKM, k)
	pooledR := make([]float64, bins)
	pooledD := make([]float64, bins)
	for c := 0; c < k; c++ {
		r := make([]float64, bins)
		d := make([]float64, bins)
		acc := int64(0)
		for b := bins - 1; b >= 0; b-- {
			acc += h.Events[c][b] + h.Censor[c][b]
			r[b] = float64(acc)
		}
		for b := 0; b < bins; b++ {
			zr, err := dp.Laplace(src, scale)
			if err != nil {
				return KMResult{}, fmt.Errorf("lnte: %w", err)
			}
			zd, err := dp.Laplace(src, scale)
			if err != nil {
				return KMResult{}, fmt.Errorf("lnte: %w", err)
			}
			r[b] += zr
			d[b] = float64(h.Events[c][b]) + zd
			pooledR[b] += r[b]
			pooledD[b] += d[b]
		}
		ck, err := lnteCurve(r, d, h.BinWidth, o.Conf)
		if err != nil {
			return KMResult{}, fmt.Errorf("lnte: cohort %d: %w", c, err)
		}
		ck.Cohort = c
		res.Cohorts[c] = ck
	}
	ov, err := lnteCurve(pooledR, pooledD, h.BinWidth, o.Conf)
	if err != nil {
		return KMResult{}, fmt.Errorf("lnte: pooled curve: %w", err)
	}
	finishBaseline(&res, ov)
	return res, nil
}

// finishBaseline completes a baseline release (lnte, rrr) with its pooled
// curve ov: the overall curve, N, and a log-rank test marked uncalibrated.
func finishBaseline(res *KMResult, ov CohortKM) {
	ov.Cohort = -1
	res.Overall = ov
	res.N = ov.N
	attachLogRank(res)
	markUncalibrated(res)
}

// lnteTotalEpsilon is the loss of a whole LNTE release: L1 sensitivity
// 2(bins+1) of the (r, d) vector under replace-one, at scale 2/epsilon.
func lnteTotalEpsilon(epsilon float64, bins int) float64 {
	return epsilon * float64(bins+1)
}

// lnteCurve applies LNTE's forward adjustment to noisy at-risk r and events
// d on the bin grid.
func lnteCurve(r, d []float64, binWidth, conf float64) (CohortKM, error) {
	bins := len(r)
	out := CohortKM{TruncatedAt: math.NaN(), BinNRisk: make([]float64, bins), BinNEvent: make([]float64, bins)}
	noBand(&out)
	out.N = math.Max(r[0], 0)
	rr := make([]float64, bins)
	dd := make([]float64, bins)
	end := bins
	avail := math.Inf(1)
	for b := 0; b < bins; b++ {
		rb := math.Min(math.Max(r[b], 0), avail)
		if !(rb >= 1) { // fewer than one subject: the population is exhausted
			end = b
			break
		}
		db := math.Min(math.Max(d[b], 0), rb)
		rr[b], dd[b] = rb, db
		avail = rb - db
	}
	if end < bins {
		out.TruncatedAt = float64(end) * binWidth
	}
	var tm, nr, ne, nc []float64
	for b := 0; b < end; b++ {
		next := 0.0
		if b+1 < end {
			next = rr[b+1]
		}
		c := math.Max(rr[b]-dd[b]-next, 0)
		out.BinNRisk[b], out.BinNEvent[b] = rr[b], dd[b]
		if dd[b] > 0 || c > 0 {
			tm = append(tm, float64(b)*binWidth)
			nr = append(nr, rr[b])
			ne = append(ne, dd[b])
			nc = append(nc, c)
		}
	}
	if len(tm) == 0 {
		out.Curve = emptyCurve(conf)
		return out, nil
	}
	curve, err := survival.KaplanMeierFromCounts(tm, nr, ne, nc, conf)
	if err != nil {
		return CohortKM{}, err
	}
	out.Curve = curve
	return out, nil
}
