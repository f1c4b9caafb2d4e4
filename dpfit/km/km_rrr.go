package km

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// RRRKM draws Kaplan–Meier curves from a locally sanitized stream whose
// cohort labels went through revised randomized response (paper 004,
// mechanisms.md §2). h counts the records by their *reported* label; mech is
// the RRR mechanism that produced the labels (its exact sampling table is
// used). In every bin the event and censoring counts by reported label are
// debiased with M^-1 = (I - q J) / (1 - n q), q the probability of reporting
// a given other label (for the nominal mechanism q = (1-p)/n and
// 1 - n q = p), which removes the pull of every curve toward the mixture.
// Debiased counts are signed, so the curve is drawn by the same signed
// post-processing as NoisyHistogramKM (isotonic curve, consistent counts,
// truncation where the debiasing noise dominates; opts.Epsilon is ignored).
//
// No extra budget: this is post-processing of the local release, whose
// guarantee is epsilon-local-DP for each record's cohort label only; times
// and events are not protected by RRR (combine with the TE sanitizer for
// that). Epsilon is mech.Epsilon(), the exact loss of the sampling table.
func RRRKM(h *Histogram, mech *dp.RRR, opts KMOptions) (KMResult, error) {
	if err := h.check(); err != nil {
		return KMResult{}, fmt.Errorf("rrr km: %w", err)
	}
	if mech == nil {
		return KMResult{}, fmt.Errorf("rrr km: nil mechanism")
	}
	k := h.Cohorts()
	if mech.Labels() != k {
		return KMResult{}, fmt.Errorf("rrr km: mechanism has %d labels, histogram %d cohorts", mech.Labels(), k)
	}
	o := opts
	o.Epsilon = 1 // not used: no noise is added here
	o, err := o.withDefaults()
	if err != nil {
		return KMResult{}, fmt.Errorf("rrr km: %w", err)
	}
	q := mech.ReportProb(0, 1)    // another given label
	stay := mech.ReportProb(0, 0) // the true label: 1 - (n-1) q
	a := stay - q                 // = 1 - n q, the diagonal of M - qJ
	if !(a > 0) {
		return KMResult{}, fmt.Errorf("rrr km: mechanism carries no signal (p = %v)", a)
	}
	bins := h.Bins
	ev := debiasRRR(h.Events, bins, q, a)
	ce := debiasRRR(h.Censor, bins, q, a)
	// Plug-in variance of each debiased event cell: obs_k is a sum of
	// Bernoullis with success stay (true label k) or q (others).
	evVar := make([][]float64, k)
	for c := 0; c < k; c++ {
		evVar[c] = make([]float64, bins)
	}
	for b := 0; b < bins; b++ {
		total := 0.0
		for c := 0; c < k; c++ {
			total += float64(h.Events[c][b])
		}
		for c := 0; c < k; c++ {
			x := math.Min(math.Max(ev[c][b], 0), total)
			v := x*stay*(1-stay) + (total-x)*q*(1-q)
			evVar[c][b] = v / (a * a)
		}
	}
	res := KMResult{
		Method:       MethodRRRKM,
		Epsilon:      mech.Epsilon(),
		EpsilonTotal: mech.Epsilon(),
		Guarantee:    GuaranteeLocalDP,
		Neighbouring: "one record's cohort label (local; time and event not protected by RRR)",
		BinWidth:     h.BinWidth,
		Mechanism: fmt.Sprintf("RRR on the cohort label (n = %d, p = %.6g), counts debiased with M^-1 per bin, "+
			"signed post-processing; no extra budget", k, a),
	}
	res.Cohorts = make([]CohortKM, k)
	for c := 0; c < k; c++ {
		vc := evVar[c]
		ck, err := kmFromSignedCells(ev[c], ce[c], func(b int) float64 { return vc[b] }, h.BinWidth, o)
		if err != nil {
			return KMResult{}, fmt.Errorf("rrr km: cohort %d: %w", c, err)
		}
		ck.Cohort = c
		res.Cohorts[c] = ck
	}
	// The pooled curve needs no debiasing: RRR leaves totals unchanged.
	pe, pc := make([]float64, bins), make([]float64, bins)
	for c := 0; c < k; c++ {
		for b := 0; b < bins; b++ {
			pe[b] += float64(h.Events[c][b])
			pc[b] += float64(h.Censor[c][b])
		}
	}
	ov, err := kmFromSignedCells(pe, pc, func(int) float64 { return 0 }, h.BinWidth, o)
	if err != nil {
		return KMResult{}, fmt.Errorf("rrr km: pooled curve: %w", err)
	}
	finishBaseline(&res, ov)
	return res, nil
}

// debiasRRR returns (obs - q total) / a per bin and label.
func debiasRRR(obs [][]int64, bins int, q, a float64) [][]float64 {
	k := len(obs)
	out := make([][]float64, k)
	for c := range out {
		out[c] = make([]float64, bins)
	}
	for b := 0; b < bins; b++ {
		total := 0.0
		for c := 0; c < k; c++ {
			total += float64(obs[c][b])
		}
		for c := 0; c < k; c++ {
			out[c][b] = (float64(obs[c][b]) - q*total) / a
		}
	}
	return out
}
