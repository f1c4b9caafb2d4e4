package audit

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dpsurv/dpsurv/dp"
)

// Scores returns the adversary's cohort likelihood scores (paper 001 eq. 3)
// for every record of orig: scores[c][i] = CL(c, t_i) = sum over t̂ of
// P(c | t̂) P(t̂ | t_i), where P(c | t̂) is the share of cohort c among the
// sanitized records with time t̂ (0 for every c where no sanitized record
// has time t̂) and P(t̂ | t) is the kernel. san.Cohorts must equal
// orig.Cohorts.
func Scores(orig, san Data, k Kernel) ([][]float64, error) {
	if err := orig.Validate(); err != nil {
		return nil, fmt.Errorf("attack scores: original: %w", err)
	}
	if err := san.Validate(); err != nil {
		return nil, fmt.Errorf("attack scores: sanitized: %w", err)
	}
	if !slices.Equal(orig.Cohorts, san.Cohorts) {
		return nil, errors.New("attack scores: original and sanitized cohort label lists differ")
	}
	if k == nil {
		return nil, errors.New("attack scores: nil kernel")
	}
	nc := len(orig.Cohorts)
	// P(c | t̂) for every sanitized time present.
	row := map[int64]int{}
	var share []float64 // row-major: share[r*nc + c]
	var total []float64
	for i, t := range san.Time {
		r, ok := row[t]
		if !ok {
			r = len(total)
			row[t] = r
			total = append(total, 0)
			share = append(share, make([]float64, nc)...)
		}
		share[r*nc+san.Cohort[i]]++
		total[r]++
	}
	for r, n := range total {
		for c := range nc {
			share[r*nc+c] /= n
		}
	}
	// CL depends on t only: compute once per distinct original time.
	cache := map[int64][]float64{}
	out := make([][]float64, nc)
	for c := range out {
		out[c] = make([]float64, orig.Len())
	}
	for i, t := range orig.Time {
		cl, ok := cache[t]
		if !ok {
			cl = make([]float64, nc)
			k.Outcomes(t, func(tHat int64, p float64) {
				r, ok := row[tHat]
				if !ok {
					return
				}
				for c := range nc {
					cl[c] += share[r*nc+c] * p
				}
			})
			cache[t] = cl
		}
		for c := range nc {
			out[c][i] = cl[c]
		}
	}
	return out, nil
}

// NonPrivateScores returns the scores of the non-private release
// (paper 001: CL(c, t) = P(c | t) estimated from the original data).
func NonPrivateScores(orig Data) ([][]float64, error) {
	return Scores(orig, orig, IdentityKernel{})
}

// AttackOptions configures CohortInference; zero values take paper 001's
// settings.
type AttackOptions struct {
	// PerCohort is the number of targets drawn from every cohort for one
	// balanced test set (default 100). When a cohort is smaller, every
	// cohort contributes the size of the smallest non-empty cohort.
	PerCohort int
	// Resamples is the number of test sets drawn (default 100).
	Resamples int
	// Quantile: a target is assigned to cohort c when its score for c is at
	// or above this quantile of the test set's scores for c (default 0.95).
	Quantile float64
}

func (o AttackOptions) withDefaults() (AttackOptions, error) {
	o.PerCohort = cmp.Or(o.PerCohort, 100)
	o.Resamples = cmp.Or(o.Resamples, 100)
	o.Quantile = cmp.Or(o.Quantile, 0.95)
	if o.PerCohort < 1 || o.Resamples < 1 {
		return o, fmt.Errorf("per-cohort test size and resamples must be >= 1, got %d and %d", o.PerCohort, o.Resamples)
	}
	if !(o.Quantile > 0 && o.Quantile < 1) {
		return o, fmt.Errorf("quantile must be in (0, 1), got %v", o.Quantile)
	}
	return o, nil
}

// Summary summarises a statistic over resamples.
type Summary struct {
	Median float64 `json:"median"`
	// Lower and Upper are the 2.5% and 97.5% quantiles over resamples.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// AttackResult is the precision of one score set, per cohort (NaN for a
// cohort absent from the original data).
type AttackResult struct {
	Precision []Summary
	// Samples[c][r] is the precision for cohort c on test set r.
	Samples [][]float64
}

// AttackRun describes the test sets shared by every score set.
type AttackRun struct {
	// TestPerCohort is the number of targets drawn per cohort.
	TestPerCohort int
	Resamples     int
	Quantile      float64
	Results       []AttackResult // one per score set, in order
}

// CohortInference runs paper 001's attack on every score set (e.g. the
// sanitized and the non-private scores) over the same resampled balanced
// test sets: for each resample it draws TestPerCohort targets from every
// non-empty cohort of orig without replacement; for each cohort c it assigns
// to c the targets whose score for c is at or above the Quantile of the
// test set's scores for c (ties included, with a relative tolerance of
// 1e-9), and records the precision: the share of assigned targets truly in
// c. A cohort whose scores are all equal therefore gets every target
// assigned, i.e. precision 1/(number of cohorts) — the attack learns
// nothing.
func CohortInference(orig Data, src dp.Source, opts AttackOptions, scoreSets ...[][]float64) (AttackRun, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return AttackRun{}, fmt.Errorf("cohort inference: %w", err)
	}
	if err := orig.Validate(); err != nil {
		return AttackRun{}, fmt.Errorf("cohort inference: %w", err)
	}
	if src == nil {
		return AttackRun{}, errors.New("cohort inference: nil randomness source")
	}
	nc := len(orig.Cohorts)
	for s, sc := range scoreSets {
		if len(sc) != nc {
			return AttackRun{}, fmt.Errorf("cohort inference: score set %d has %d cohorts, want %d", s, len(sc), nc)
		}
		for c := range sc {
			if len(sc[c]) != orig.Len() {
				return AttackRun{}, fmt.Errorf("cohort inference: score set %d cohort %d has %d scores, want %d", s, c, len(sc[c]), orig.Len())
			}
		}
	}
	members := orig.ByCohort()
	m := o.PerCohort
	var present []int
	for c, ix := range members {
		if len(ix) > 0 {
			present = append(present, c)
			m = min(m, len(ix))
		}
	}
	if len(present) < 2 {
		return AttackRun{}, errors.New("cohort inference: need records from at least two cohorts")
	}
	run := AttackRun{TestPerCohort: m, Resamples: o.Resamples, Quantile: o.Quantile, Results: make([]AttackResult, len(scoreSets))}
	for s := range run.Results {
		run.Results[s].Samples = make([][]float64, nc)
	}
	pool := make([][]int, nc)
	for c := range members {
		pool[c] = append([]int(nil), members[c]...)
	}
	test := make([]int, 0, m*len(present))
	vals := make([]float64, 0, m*len(present))
	for range o.Resamples {
		test = test[:0]
		for _, c := range present {
			p := pool[c]
			for j := 0; j < m; j++ { // partial Fisher–Yates
				k := j + int(dp.Uint64n(src, uint64(len(p)-j)))
				p[j], p[k] = p[k], p[j]
				test = append(test, p[j])
			}
		}
		for s, sc := range scoreSets {
			for _, c := range present {
				vals = vals[:0]
				for _, i := range test {
					vals = append(vals, sc[c][i])
				}
				tau := orderStat(vals, int(math.Floor(o.Quantile*float64(len(vals)))))
				tau -= 1e-9*math.Abs(tau) + 1e-15
				assigned, hits := 0, 0
				for _, i := range test {
					if sc[c][i] >= tau {
						assigned++
						if orig.Cohort[i] == c {
							hits++
						}
					}
				}
				run.Results[s].Samples[c] = append(run.Results[s].Samples[c], float64(hits)/float64(assigned))
			}
		}
	}
	for s := range run.Results {
		res := &run.Results[s]
		res.Precision = make([]Summary, nc)
		for c := range nc {
			res.Precision[c] = summarise(res.Samples[c])
		}
	}
	return run, nil
}

// summarise returns the median and the 2.5% / 97.5% quantiles (linear
// interpolation, R's type 7); NaN for no samples.
func summarise(x []float64) Summary {
	if len(x) == 0 {
		return Summary{math.NaN(), math.NaN(), math.NaN()}
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return Summary{Median: quantile7(s, 0.5), Lower: quantile7(s, 0.025), Upper: quantile7(s, 0.975)}
}

func quantile7(sorted []float64, p float64) float64 {
	h := p * float64(len(sorted)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// orderStat returns the k-th smallest of x (0-based), the value
// sort.Float64s would put at index k, reordering x: a quickselect with a
// three-way partition (scores tie a lot: many are 0 or 1), linear time
// where the sort it replaced was most of the sanitizers evaluation's
// attack. With a NaN it sorts, as before (sort.Float64s orders NaN first).
func orderStat(x []float64, k int) float64 {
	for _, v := range x {
		if v != v {
			sort.Float64s(x)
			return x[k]
		}
	}
	lo, hi := 0, len(x) // x[lo:hi] holds the k-th
	for {
		a, b, c := x[lo], x[lo+(hi-lo)/2], x[hi-1]
		pivot := max(min(a, b), min(max(a, b), c)) // median of three
		// x[lo:lt] < pivot, x[lt:i] == pivot, x[gt:hi] > pivot
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch v := x[i]; {
			case v < pivot:
				x[lt], x[i] = x[i], x[lt]
				lt++
				i++
			case v > pivot:
				gt--
				x[gt], x[i] = x[i], x[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return pivot
		}
	}
}
