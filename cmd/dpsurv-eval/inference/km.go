package inference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/survival"
)

// KMConfig is one Kaplan–Meier coverage study: Reps bootstrap replicates of
// every cohort of the data (the world: each cohort's records; the truth: its
// full-data KM), each released at Epsilon by Method with bins of BinWidth
// over [0, TimeMax].
type KMConfig struct {
	Method      string // "hierarchical" (default) or "histogram"
	Epsilon     float64
	BinWidth    float64 // 0: km.DefaultBinWidth(TimeMax)
	TimeMax     float64
	Checkpoints []float64
	Reps        int
	Seed        uint64
	// IntervalSims is passed to km.KMOptions (0: the release default).
	IntervalSims int
	// Cohorts limits the study to the first Cohorts cohorts (0: all).
	Cohorts int
}

// PointCoverage is the coverage of the pointwise 95% intervals at one time.
type PointCoverage struct {
	Time float64
	// Reported is the number of (replicate, cohort) releases whose curve
	// reaches Time (not truncated before it); Covered of them contain the
	// truth in [lower, upper], SamplingCovered in the Greenwood-only
	// interval. NonPrivate counts the non-private Greenwood interval of the
	// same bootstrap sample (unbinned), out of Intervals = reps x cohorts.
	Intervals, Reported, Covered, SamplingCovered, NonPrivate int
}

// MedianCoverage summarises the private medians.
type MedianCoverage struct {
	// WithMedian: (replicate, cohort) pairs whose cohort's true median
	// exists. Covered: the released interval [median_lower, median_upper]
	// holds it (a null limit is unbounded on its side: the release then
	// states only a one-sided bound). Released: a median was released.
	// NonPrivate: R's interval of the non-private bootstrap KM covers it.
	WithMedian, Covered, Released, NonPrivate int
	// WithoutMedian: pairs whose cohort's curve does not reach 0.5; False:
	// a median was released for them (NonPrivateFalse: R gave one).
	WithoutMedian, False, NonPrivateFalse int
}

// BandCoverage summarises the simultaneous bands.
type BandCoverage struct {
	// Curves: (replicate, cohort) releases; WithBand of them carry a band,
	// Covered of those contain the truth (at the end of each bin, as for
	// the pointwise intervals) at every released time in [band_from,
	// band_to]. CriticalSum and FromSum, ToSum add up the band's critical
	// values and range ends (for means).
	Curves, WithBand, Covered   int
	CriticalSum, FromSum, ToSum float64
}

// Coverage returns Covered/WithBand.
func (b BandCoverage) Coverage() float64 { return float64(b.Covered) / float64(b.WithBand) }

// KMResult is the outcome of a KMConfig study.
type KMResult struct {
	Config   KMConfig
	BinWidth float64
	Points   []PointCoverage
	Median   MedianCoverage
	Band     BandCoverage
}

// Coverage returns Covered/Reported of a point.
func (p PointCoverage) Coverage() float64 { return float64(p.Covered) / float64(p.Reported) }

// SamplingCoverage returns SamplingCovered/Reported.
func (p PointCoverage) SamplingCoverage() float64 {
	return float64(p.SamplingCovered) / float64(p.Reported)
}

// NonPrivateCoverage returns NonPrivate/Intervals.
func (p PointCoverage) NonPrivateCoverage() float64 {
	return float64(p.NonPrivate) / float64(p.Intervals)
}

// stepAt returns the index of the last time <= t (-1 if none).
func stepAt(time []float64, t float64) int {
	return sort.Search(len(time), func(i int) bool { return time[i] > t }) - 1
}

// survAt is a KM curve's value at t (1 before the first time).
func survAt(c survival.KMCurve, t float64) float64 {
	if i := stepAt(c.Time, t); i >= 0 {
		return c.Surv[i]
	}
	return 1
}

// survBefore is the curve's value just before x.
func survBefore(c survival.KMCurve, x float64) float64 {
	i := sort.Search(len(c.Time), func(i int) bool { return c.Time[i] >= x }) - 1
	if i >= 0 {
		return c.Surv[i]
	}
	return 1
}

func within(x, lo, hi float64) bool {
	if math.IsNaN(lo) {
		lo = math.Inf(-1)
	}
	if math.IsNaN(hi) {
		hi = math.Inf(1)
	}
	return lo <= x && x <= hi
}

// release runs the configured private KM (no log-rank calibration: the
// studies of the curves do not need it).
func release(method string, h *km.Histogram, src dp.Source, eps float64, sims, isims int) (km.KMResult, error) {
	o := km.KMOptions{Epsilon: eps, LogRankSims: sims, IntervalSims: isims}
	switch method {
	case "", "hierarchical":
		return km.HierarchicalKM(h, src, o)
	case "histogram":
		return km.NoisyHistogramKM(h, src, o)
	}
	return km.KMResult{}, fmt.Errorf("unknown method %q", method)
}

// RunKM runs a coverage study.
func RunKM(d Data, cfg KMConfig) (KMResult, error) {
	bw := cfg.BinWidth
	if bw == 0 {
		bw = km.DefaultBinWidth(cfg.TimeMax)
	}
	out := KMResult{Config: cfg, BinWidth: bw}
	groups := d.byCohort()
	if cfg.Cohorts > 0 && cfg.Cohorts < len(groups) {
		groups = groups[:cfg.Cohorts]
	}
	k := len(groups)
	truth := make([]survival.KMCurve, k)
	for c, idx := range groups {
		tt, ee := subset(d, idx)
		km, err := survival.KaplanMeier(tt, ee, 0.95)
		if err != nil {
			return out, fmt.Errorf("truth of cohort %d: %w", c, err)
		}
		truth[c] = km
	}
	out.Points = make([]PointCoverage, len(cfg.Checkpoints))
	for i, t := range cfg.Checkpoints {
		out.Points[i].Time = t
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6d))
	for r := 0; r < cfg.Reps; r++ {
		h, err := km.NewHistogram(bw, cfg.TimeMax, k)
		if err != nil {
			return out, err
		}
		boot := make([]survival.KMCurve, k)
		for c, idx := range groups {
			tt, ee := d.resample(rng, idx)
			for j := range tt {
				if err := h.Add(tt[j], ee[j], c); err != nil {
					return out, err
				}
			}
			if boot[c], err = survival.KaplanMeier(tt, ee, 0.95); err != nil {
				return out, err
			}
		}
		res, err := release(cfg.Method, h, dp.NewSeededSource(cfg.Seed*1_000_003+uint64(r)), cfg.Epsilon, -1, cfg.IntervalSims)
		if err != nil {
			return out, fmt.Errorf("replicate %d: %w", r, err)
		}
		for c := 0; c < k; c++ {
			ck := res.Cohorts[c]
			cv := ck.Curve
			bandCoverage(&out.Band, ck, truth[c], bw)
			for i, t := range cfg.Checkpoints {
				p := &out.Points[i]
				p.Intervals++
				// non-private: R's interval of the bootstrap KM at t
				if j := stepAt(boot[c].Time, t); j >= 0 && within(survAt(truth[c], t), boot[c].Lower[j], boot[c].Upper[j]) {
					p.NonPrivate++
				}
				if !math.IsNaN(ck.TruncatedAt) && t >= ck.TruncatedAt {
					continue
				}
				// the release reports bin b's events at its start: its value
				// at t estimates S just before the end of t's bin
				target := survBefore(truth[c], (math.Floor(t/bw)+1)*bw)
				p.Reported++
				j := stepAt(cv.Time, t)
				if j < 0 {
					if target == 1 {
						p.Covered++
						p.SamplingCovered++
					}
					continue
				}
				if cv.Surv[j] > 0 && within(target, cv.Lower[j], cv.Upper[j]) {
					p.Covered++
				}
				if cv.Surv[j] > 0 && within(target, ck.SamplingLower[j], ck.SamplingUpper[j]) {
					p.SamplingCovered++
				}
			}
			m := &out.Median
			tm := truth[c].Median
			released := !math.IsNaN(cv.Median)
			if math.IsNaN(tm) {
				m.WithoutMedian++
				if released {
					m.False++
				}
				if !math.IsNaN(boot[c].Median) {
					m.NonPrivateFalse++
				}
				continue
			}
			m.WithMedian++
			if released {
				m.Released++
			}
			if within(tm, cv.MedianLower, cv.MedianUpper) {
				m.Covered++
			}
			if within(tm, boot[c].MedianLower, boot[c].MedianUpper) {
				m.NonPrivate++
			}
		}
	}
	return out, nil
}

// bandCoverage adds one release's band to b: covered when the truth at the
// end of each released bin in [band_from, band_to] is inside the band.
func bandCoverage(b *BandCoverage, ck km.CohortKM, truth survival.KMCurve, bw float64) {
	b.Curves++
	if ck.BandMethod != km.BandMethodSimulated {
		return
	}
	b.WithBand++
	b.CriticalSum += ck.BandCritical
	b.FromSum += ck.BandFrom
	b.ToSum += ck.BandTo
	cv := ck.Curve
	for i, t := range cv.Time {
		if t < ck.BandFrom || t > ck.BandTo {
			continue
		}
		if !within(survBefore(truth, t+bw), ck.BandLower[i], ck.BandUpper[i]) {
			return
		}
	}
	b.Covered++
}

func subset(d Data, idx []int) ([]float64, []bool) {
	tt := make([]float64, len(idx))
	ee := make([]bool, len(idx))
	for j, i := range idx {
		tt[j], ee[j] = d.Time[i], d.Event[i]
	}
	return tt, ee
}
