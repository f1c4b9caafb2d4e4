package km

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit"
)

// DefaultLogRankSims is the default number of simulated null releases of
// the calibrated log-rank test (p-values in steps of 1/200).
const DefaultLogRankSims = 199

// Calibration descriptions (KMResult.LogRankCalibration).
const (
	LogRankCalibrationExact = "chi-square reference (exact counts, no noise)"
	LogRankCalibrationNone  = "none: no calibrated test for this method; p is null and logrank_naive_p ignores the noise"
)

// releaseFunc is a KM release mechanism with its post-processing.
type releaseFunc func(*Histogram, dp.Source, KMOptions) (KMResult, error)

// calibrateLogRank replaces the chi-square p-values of res (computed from
// the noisy, post-processed counts as if they were exact, which rejects a
// true null far too often) by Monte-Carlo p-values whose reference
// distribution includes the mechanism's noise: a parametric bootstrap under
// the null hypothesis of equal survival, built from the released values
// only.
//
// Null model (from res: post-processing). Each cohort c starts with
// round(n_c) records, n_c its released n. In every bin b, events are drawn
// Binomial(at risk, h_b) with the POOLED hazard h_b = sum_c d_cb / sum_c
// n_cb of the released per-bin counts (the null: one hazard for all), and
// censorings Binomial(remaining, g_cb) with cohort c's own released
// censoring hazard (the log-rank test allows censoring to differ between
// cohorts); what remains at the end of a cohort's released curve is
// censored there. Each simulated histogram is released again by fit — the
// same mechanism with the same public noise scales and the same
// post-processing, so a change of the mechanism's noise carries over — and
// the same chi-square statistics (overall and pairwise) are computed. The
// p-value is (1 + #{simulated >= observed}) / (1 + sims); a simulated
// statistic that is undefined counts as exceeding (conservative).
//
// The simulation's randomness is seeded from a hash of the released counts,
// so the p-values are a reproducible function of the release (anyone holding
// it and the public parameters can recompute them); it plays no part in the
// privacy guarantee, which is why this post-processing may use a
// floating-point binomial sampler. Its size is checked by simulation in
// TestDPLogRankSize (permuted labels, alpha = 0.05).
func calibrateLogRank(res *KMResult, h *Histogram, o KMOptions, fit releaseFunc) error {
	k := len(res.Cohorts)
	res.LogRankNaiveP = res.LogRank.P
	res.PairwiseNaiveP = nil
	for _, p := range res.Pairwise {
		res.PairwiseNaiveP = append(res.PairwiseNaiveP, p.P)
	}
	if k < 2 || o.naiveLogRank {
		return nil
	}
	if math.IsInf(o.Epsilon, 1) {
		res.LogRankCalibration = LogRankCalibrationExact
		return nil
	}
	sims := o.LogRankSims
	if sims == 0 {
		sims = defaultSims(DefaultLogRankSims, 19, h.Bins*k)
	}
	if sims < 0 {
		markUncalibrated(res)
		return nil
	}
	res.LogRankCalibration = fmt.Sprintf("monte-carlo: %d releases simulated under equal survival from the released counts "+
		"through the same mechanism and post-processing; p = (1 + #{simulated chisq >= observed}) / (1 + %d)", sims, sims)
	null := newNullModel(res)
	src := rand.NewChaCha8(releaseSeed(res))
	hs, err := NewHistogram(h.BinWidth, h.TMax, k)
	if err != nil {
		return fmt.Errorf("log-rank calibration: %w", err)
	}
	so := o
	so.naiveLogRank, so.IntervalSims = true, -1
	so.noIntervals = true // the tests use the counts only
	so.countsOnly = true
	obs := res.LogRank.ChiSq
	ge := 0
	pairGe := make([]int, len(res.Pairwise))
	for r := 0; r < sims; r++ {
		null.sample(hs, src)
		rs, err := fit(hs, src, so)
		if err != nil {
			return fmt.Errorf("log-rank calibration: simulated release: %w", err)
		}
		if !(rs.LogRank.ChiSq < obs) {
			ge++
		}
		for i, p := range res.Pairwise {
			if i >= len(rs.Pairwise) || !(rs.Pairwise[i].ChiSq < p.ChiSq) {
				pairGe[i]++
			}
		}
	}
	res.LogRankPFloor = 1 / float64(1+sims)
	if !math.IsNaN(obs) {
		res.LogRank.P = float64(1+ge) / float64(1+sims)
	}
	for i := range res.Pairwise {
		if !math.IsNaN(res.Pairwise[i].ChiSq) {
			res.Pairwise[i].P = float64(1+pairGe[i]) / float64(1+sims)
		}
	}
	return nil
}

// markUncalibrated keeps the chi-square p-values of a method without a
// calibrated test under the naive names only.
func markUncalibrated(res *KMResult) {
	res.LogRankNaiveP = res.LogRank.P
	res.PairwiseNaiveP = nil
	for i, p := range res.Pairwise {
		res.PairwiseNaiveP = append(res.PairwiseNaiveP, p.P)
		res.Pairwise[i].P = math.NaN()
	}
	if len(res.Cohorts) >= 2 {
		res.LogRank.P = math.NaN()
		res.LogRankCalibration = LogRankCalibrationNone
	}
}

// releaseSeed hashes the released per-bin counts of every cohort.
func releaseSeed(res *KMResult) [32]byte {
	hh := dp.NewSeedHash()
	for _, ck := range res.Cohorts {
		for i := range ck.BinNRisk {
			hh.Float64(ck.BinNRisk[i], ck.BinNEvent[i])
		}
	}
	return hh.Seed()
}

// nullModel is the data-generating model of calibrateLogRank.
type nullModel struct {
	n0     []int64     // per cohort
	hazard []float64   // per bin, pooled
	cens   [][]float64 // [cohort][bin] censoring hazard (1 at the curve's end)
	// hz and cz are hazard and cens as dpfit.BinomialProb: their
	// logarithms taken once for the simulations' many draws
	hz []dpfit.BinomialProb
	cz [][]dpfit.BinomialProb
}

func newNullModel(res *KMResult) *nullModel {
	k := len(res.Cohorts)
	bins := len(res.Cohorts[0].BinNRisk)
	m := &nullModel{n0: make([]int64, k), hazard: make([]float64, bins), cens: make([][]float64, k)}
	dSum := make([]float64, bins)
	nSum := make([]float64, bins)
	for c, ck := range res.Cohorts {
		m.n0[c] = int64(math.Round(math.Max(ck.N, 0)))
		m.cens[c] = make([]float64, bins)
		end := 0
		for b := 0; b < bins; b++ {
			if ck.BinNRisk[b] > 0 {
				end = b + 1
			}
		}
		if end == 0 {
			m.cens[c][0] = 1
			continue
		}
		for b := 0; b < end; b++ {
			n, d := ck.BinNRisk[b], ck.BinNEvent[b]
			dSum[b] += d
			nSum[b] += n
			next := 0.0
			if b+1 < end {
				next = ck.BinNRisk[b+1]
			}
			if rem := n - d; rem > 0 && b+1 < end {
				m.cens[c][b] = math.Min(math.Max((rem-next)/rem, 0), 1)
			} else {
				m.cens[c][b] = 1
			}
		}
	}
	for b := range m.hazard {
		if nSum[b] > 0 {
			m.hazard[b] = math.Min(math.Max(dSum[b]/nSum[b], 0), 1)
		}
	}
	m.hz = binomialProbs(m.hazard)
	m.cz = make([][]dpfit.BinomialProb, k)
	for c := range m.cz {
		m.cz[c] = binomialProbs(m.cens[c])
	}
	return m
}

// sample fills h (the model's layout) with one simulated data set.
func (m *nullModel) sample(h *Histogram, src *rand.ChaCha8) {
	for c := range m.n0 {
		n := m.n0[c]
		for b := 0; b < h.Bins; b++ {
			var d, ce int64
			if n > 0 {
				d = m.hz[b].Sim(src, n)
				ce = m.cz[c][b].Sim(src, n-d)
			}
			h.Events[c][b], h.Censor[c][b] = d, ce
			n -= d + ce
		}
	}
}

// binomialProbs returns p as dpfit.BinomialProb.
func binomialProbs(p []float64) []dpfit.BinomialProb {
	out := make([]dpfit.BinomialProb, len(p))
	for i, v := range p {
		out[i] = dpfit.NewBinomialProb(v)
	}
	return out
}

// simCells is the histogram size (bins x cohorts) up to which the default
// simulation counts apply in full; above it they shrink in proportion (to
// a floor), so that a release with many cells (1-day bins over years) does
// not stall its aggregator: each simulation costs about one release.
const simCells = 4096

// defaultSims is def scaled down for histograms of more than simCells
// cells, never below floor.
func defaultSims(def, floor, cells int) int {
	if cells <= simCells {
		return def
	}
	return max(floor, def*simCells/cells)
}
