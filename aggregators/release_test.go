package aggregators_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
)

// A window that received no records is released on the clock (emptiness
// is not revealed) but flagged low_information in every cohort, with
// n >= 0 equal to the first at-risk number and no median; a window with
// records carries a calibrated log-rank block (p, p_naive, calibration,
// pairwise with labels) and the sampling-only interval beside the
// noise-aware one.
func TestReleaseDocuments(t *testing.T) {
	cfg := kmConfig("doc", time.Minute, 1)
	cfg.Params = aggregators.KMParams{Method: aggregators.MethodHierarchical, BinWidth: 1, LogRankSims: 19, IntervalSims: 10}
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, cfg)
	r.observe(0, rowsOf("full", 300))
	r.clock.Set(at(61))
	r.tick()
	r.clock.Set(at(121)) // the second window received nothing
	r.tick()
	got := r.fits.fits(t)
	for _, c := range cohorts {
		m, ok := got[key("doc", 60, c)]
		if !ok {
			t.Fatalf("no release of the empty window for %s: %v", c, keys(got))
		}
		if !m.LowInformation || !(float64(m.LowInformationThreshold) > 0) {
			t.Errorf("empty window, cohort %s: low_information %v (threshold %v)", c, m.LowInformation, m.LowInformationThreshold)
		}
		if n := float64(m.N); n < 0 || math.IsNaN(n) || (len(m.NRisk) > 0 && float64(m.NRisk[0]) != n) {
			t.Errorf("empty window, cohort %s: n %v, n_risk %v", c, m.N, m.NRisk)
		}
		if !math.IsNaN(float64(m.Median)) || m.MedianNote == "" {
			t.Errorf("empty window, cohort %s: median %v (note %q)", c, m.Median, m.MedianNote)
		}
		full := got[key("doc", 0, c)]
		lr := full.LogRank
		if lr == nil || lr.DF == nil || *lr.DF != len(cohorts)-1 || !strings.HasPrefix(lr.Calibration, "monte-carlo") {
			t.Fatalf("cohort %s: log-rank block %+v", c, lr)
		}
		if p := float64(lr.P); math.IsNaN(p) {
			// at the Monte-Carlo floor: a bound, never "p": 1/20
			if float64(lr.PUpper) != 1.0/20 {
				t.Errorf("cohort %s: p null with p_upper %v, want 1/20", c, lr.PUpper)
			}
		} else if !(p > 1.0/20+1e-12 && p <= 1) || math.Mod(p*20, 1) > 1e-9 && math.Mod(p*20, 1) < 1-1e-9 || !math.IsNaN(float64(lr.PUpper)) {
			t.Errorf("cohort %s: calibrated p %v (p_upper %v) is not a multiple of 1/20 above the floor (19 simulations)", c, p, lr.PUpper)
		}
		if full.ConfType != "log-log" || full.Conf != 0.95 {
			t.Errorf("cohort %s: conf_type %q conf %v, want the stated log-log 0.95", c, full.ConfType, full.Conf)
		}
		if len(lr.Pairwise) != 1 || lr.Pairwise[0].A != cohorts[0] || lr.Pairwise[0].B != cohorts[1] {
			t.Errorf("cohort %s: pairwise %+v", c, lr.Pairwise)
		}
		if len(full.SamplingLower) != len(full.Lower) || full.LowInformation {
			t.Errorf("cohort %s: %d sampling limits for %d rows, low_information %v", c, len(full.SamplingLower), len(full.Lower), full.LowInformation)
		}
		for i := range full.Lower {
			if full.Lower[i] > full.SamplingLower[i]+1e-12 {
				t.Fatalf("cohort %s row %d: lower %v above the sampling-only %v", c, i, full.Lower[i], full.SamplingLower[i])
			}
		}
	}
}

// TestReleaseLogRankFloorIsBound: cohorts whose curves do not overlap give
// a calibrated log-rank p at its Monte-Carlo floor; the topic publishes it
// as p_upper = 1/(1 + sims) with p null (the old main published "p": 0.05
// here, a bound printed as an estimate), in the overall and pairwise test.
func TestReleaseLogRankFloorIsBound(t *testing.T) {
	cfg := kmConfig("floor", time.Minute, 8)
	setParams(&cfg, func(p *aggregators.KMParams) { p.LogRankSims, p.IntervalSims = 19, -1 })
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, cfg)
	rows := rowsOf("split", 400)
	for i := range rows.Time {
		rows.Event[i] = true
		rows.Time[i] = 1 // cohort A dies at once
		if rows.Cohort[i] == 1 {
			rows.Time[i] = 9 // cohort B at the horizon
		}
	}
	r.observe(0, rows)
	r.clock.Set(at(61))
	r.tick()
	got := r.fits.fits(t)
	for _, c := range cohorts {
		lr := got[key("floor", 0, c)].LogRank
		if lr == nil || len(lr.Pairwise) != 1 {
			t.Fatalf("cohort %s: log-rank block %+v", c, lr)
		}
		if !math.IsNaN(float64(lr.P)) || float64(lr.PUpper) != 1.0/20 {
			t.Errorf("cohort %s: p %v p_upper %v, want null and 1/20", c, lr.P, lr.PUpper)
		}
		if pw := lr.Pairwise[0]; !math.IsNaN(float64(pw.P)) || float64(pw.PUpper) != 1.0/20 {
			t.Errorf("cohort %s: pairwise p %v p_upper %v, want null and 1/20", c, pw.P, pw.PUpper)
		}
	}
}
