package inference

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/survival"
)

// BinWidthConfig is the error-vs-bin-width study: the whole data released
// Reps times per (epsilon, width) by the hierarchical KM.
type BinWidthConfig struct {
	Epsilons []float64
	Widths   []float64
	TimeMax  float64
	// Horizon: the error is measured over [0, Horizon] (days).
	Horizon float64
	Reps    int
	Seed    uint64
}

// BinWidthCell is one (epsilon, width) cell: MeanSup is the mean over
// releases and cohorts of sup |S_release(t) - S_exact(t)| over the grid
// t = 0, 10, 20, ... up to the smaller of Horizon and the curve's
// truncation; Reach is the mean share of [0, Horizon] the curves cover.
type BinWidthCell struct {
	Epsilon, Width float64
	Bins           int
	MeanSup, Reach float64
}

// RunBinWidth runs the study.
func RunBinWidth(d Data, cfg BinWidthConfig) ([]BinWidthCell, error) {
	groups := d.byCohort()
	exact := make([]survival.KMCurve, len(groups))
	for c, idx := range groups {
		tt, ee := subset(d, idx)
		km, err := survival.KaplanMeier(tt, ee, 0.95)
		if err != nil {
			return nil, err
		}
		exact[c] = km
	}
	var out []BinWidthCell
	for i, eps := range cfg.Epsilons {
		for j, w := range cfg.Widths {
			h, err := km.NewHistogram(w, cfg.TimeMax, len(groups))
			if err != nil {
				return nil, err
			}
			for r := range d.Time {
				if err := h.Add(d.Time[r], d.Event[r], d.Cohort[r]); err != nil {
					return nil, err
				}
			}
			cell := BinWidthCell{Epsilon: eps, Width: w, Bins: h.Bins}
			n := 0
			for r := 0; r < cfg.Reps; r++ {
				src := dp.NewSeededSource(cfg.Seed + uint64(1_000_000*i+1000*j+r))
				res, err := km.HierarchicalKM(h, src, km.KMOptions{Epsilon: eps, LogRankSims: -1, IntervalSims: -1})
				if err != nil {
					return nil, fmt.Errorf("epsilon %v, width %v: %w", eps, w, err)
				}
				for c, ck := range res.Cohorts {
					end := cfg.Horizon
					if !math.IsNaN(ck.TruncatedAt) {
						end = math.Min(end, ck.TruncatedAt)
					}
					sup := 0.0
					for t := 0.0; t < end; t += 10 {
						sup = math.Max(sup, math.Abs(survAt(ck.Curve, t)-survAt(exact[c], t)))
					}
					cell.MeanSup += sup
					cell.Reach += math.Max(end, 0) / cfg.Horizon
					n++
				}
			}
			cell.MeanSup /= float64(n)
			cell.Reach /= float64(n)
			out = append(out, cell)
		}
	}
	return out, nil
}
