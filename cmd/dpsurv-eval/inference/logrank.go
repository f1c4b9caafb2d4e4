package inference

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/survival"
)

// LogRankConfig is a size or power study of the calibrated DP log-rank
// test. Size (Permute): each replicate draws Records records with
// replacement from the whole data and gives them Groups labels at random
// (no true difference). Power (!Permute): each replicate draws the records
// of two real cohorts (the pair whose full-data log-rank statistic is
// closest to PowerChiSq, default 10: a moderate difference), each with
// replacement, keeping their labels.
type LogRankConfig struct {
	Method   string // "hierarchical" (default) or "histogram"
	Epsilon  float64
	TimeMax  float64
	Permute  bool
	Groups   int // size study: number of random groups (>= 2)
	Records  int // size study: records per replicate (0: all)
	Reps     int
	Sims     int // km.KMOptions.LogRankSims
	Alpha    float64
	Seed     uint64
	BinWidth float64 // 0: km.DefaultBinWidth(TimeMax)
	// PowerChiSq picks the pair of a power study (0: 10).
	PowerChiSq float64
}

// LogRankResult counts rejections at Alpha.
type LogRankResult struct {
	Config LogRankConfig
	// Pair is the pair of cohorts of a power study and PairChiSq its
	// full-data log-rank statistic.
	Pair      [2]int
	PairChiSq float64
	// Tests is the number of releases with a defined test; Rejected of them
	// rejected with the calibrated p, NaiveRejected with the chi-square p
	// of the noisy counts, NonPrivateRejected with the exact test on the
	// same records (unbinned).
	Tests, Rejected, NaiveRejected, NonPrivateRejected int
}

// Rate returns Rejected/Tests.
func (r LogRankResult) Rate() float64 { return float64(r.Rejected) / float64(r.Tests) }

// NaiveRate returns NaiveRejected/Tests.
func (r LogRankResult) NaiveRate() float64 { return float64(r.NaiveRejected) / float64(r.Tests) }

// NonPrivateRate returns NonPrivateRejected/Tests.
func (r LogRankResult) NonPrivateRate() float64 {
	return float64(r.NonPrivateRejected) / float64(r.Tests)
}

// powerPair returns the two cohorts whose full-data log-rank statistic is
// closest to target.
func powerPair(d Data, target float64) ([2]int, float64, error) {
	pw, err := survival.PairwiseLogRank(d.Time, d.Event, d.Cohort, len(d.Labels))
	if err != nil {
		return [2]int{}, 0, err
	}
	best, chi := math.Inf(1), 0.0
	var pair [2]int
	for _, p := range pw {
		if dd := math.Abs(p.ChiSq - target); dd < best {
			best, pair, chi = dd, [2]int{p.A, p.B}, p.ChiSq
		}
	}
	return pair, chi, nil
}

// RunLogRank runs a size or power study.
func RunLogRank(d Data, cfg LogRankConfig) (LogRankResult, error) {
	out := LogRankResult{Config: cfg}
	bw := cfg.BinWidth
	if bw == 0 {
		bw = km.DefaultBinWidth(cfg.TimeMax)
	}
	alpha := cfg.Alpha
	if alpha == 0 {
		alpha = 0.05
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c72))
	var pools [][]int // records to draw from, per group (power) or one pool (size)
	groups := cfg.Groups
	if cfg.Permute {
		if groups < 2 {
			return out, fmt.Errorf("size study needs at least 2 groups, got %d", groups)
		}
		all := make([]int, len(d.Time))
		for i := range all {
			all[i] = i
		}
		pools = [][]int{all}
	} else {
		target := cfg.PowerChiSq
		if target == 0 {
			target = 10
		}
		pair, chi, err := powerPair(d, target)
		if err != nil {
			return out, err
		}
		out.Pair, out.PairChiSq = pair, chi
		by := d.byCohort()
		pools = [][]int{by[pair[0]], by[pair[1]]}
		groups = 2
	}
	for r := 0; r < cfg.Reps; r++ {
		h, err := km.NewHistogram(bw, cfg.TimeMax, groups)
		if err != nil {
			return out, err
		}
		var tt []float64
		var ee []bool
		var gg []int
		addRec := func(i, g int) error {
			tt, ee, gg = append(tt, d.Time[i]), append(ee, d.Event[i]), append(gg, g)
			return h.Add(d.Time[i], d.Event[i], g)
		}
		if cfg.Permute {
			n := cfg.Records
			if n == 0 {
				n = len(pools[0])
			}
			for j := 0; j < n; j++ {
				if err := addRec(pools[0][rng.IntN(len(pools[0]))], rng.IntN(groups)); err != nil {
					return out, err
				}
			}
		} else {
			for g, pool := range pools {
				for range pool {
					if err := addRec(pool[rng.IntN(len(pool))], g); err != nil {
						return out, err
					}
				}
			}
		}
		o := km.KMOptions{Epsilon: cfg.Epsilon, LogRankSims: cfg.Sims, IntervalSims: -1}
		var res km.KMResult
		src := dp.NewSeededSource(cfg.Seed*1_000_003 + uint64(r))
		switch cfg.Method {
		case "", "hierarchical":
			res, err = km.HierarchicalKM(h, src, o)
		case "histogram":
			res, err = km.NoisyHistogramKM(h, src, o)
		default:
			return out, fmt.Errorf("unknown method %q", cfg.Method)
		}
		if err != nil {
			return out, fmt.Errorf("replicate %d: %w", r, err)
		}
		if math.IsNaN(res.LogRank.P) {
			continue
		}
		out.Tests++
		if res.LogRank.P <= alpha {
			out.Rejected++
		}
		if res.LogRankNaiveP <= alpha {
			out.NaiveRejected++
		}
		lr, err := survival.LogRankTest(tt, ee, gg, groups)
		if err == nil && lr.P <= alpha {
			out.NonPrivateRejected++
		}
	}
	return out, nil
}
