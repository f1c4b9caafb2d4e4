package audit

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/survival"
)

// UtilityOptions configures Measure.
type UtilityOptions struct {
	// KLBin is the width, in time units, of the histogram bins of the KL
	// divergence (default 1).
	KLBin int64
	// TimeMax is the upper end of the KL histogram domain [0, TimeMax]
	// (times above go to the last bin); 0 takes the largest time of either
	// dataset (the auditor's non-private path may look at the data).
	TimeMax int64
	// Alpha is the pseudo-count added to every bin of both histograms
	// before the KL divergence (default 0.5, the Krichevsky–Trofimov
	// estimator), so that a bin the sanitized data lost costs a large but
	// finite amount and identical data give exactly 0.
	Alpha float64
	// Conf is the confidence level of the KM curves (default 0.95).
	Conf float64
}

func (o UtilityOptions) withDefaults() (UtilityOptions, error) {
	o.KLBin = cmp.Or(o.KLBin, 1)
	o.Alpha = cmp.Or(o.Alpha, 0.5)
	o.Conf = cmp.Or(o.Conf, 0.95)
	if o.KLBin < 1 {
		return o, fmt.Errorf("kl bin width must be >= 1, got %d", o.KLBin)
	}
	if !(o.Alpha > 0) || math.IsInf(o.Alpha, 0) {
		return o, fmt.Errorf("kl pseudo-count must be positive, got %v", o.Alpha)
	}
	if o.TimeMax < 0 {
		return o, fmt.Errorf("time max must be >= 0, got %d", o.TimeMax)
	}
	if !(o.Conf > 0 && o.Conf < 1) {
		return o, fmt.Errorf("confidence level must be in (0, 1), got %v", o.Conf)
	}
	return o, nil
}

// CohortUtility holds the utility measures of one cohort (NaN where a
// measure is undefined, e.g. the cohort vanished from the sanitized data).
type CohortUtility struct {
	NOriginal, NSanitized int
	// KL is KL(P || Q) of the original (P) and sanitized (Q) time
	// histograms, both smoothed with UtilityOptions.Alpha.
	KL float64
	// MAE is the mean absolute difference of quantile-matched times: the
	// Wasserstein-1 distance between the two empirical time distributions,
	// in time units (equal to the mean |t_(i) - t̂_(i)| over sorted times
	// when the sizes agree).
	MAE float64
	// LogRank compares the sanitized with the original KM curve (two groups:
	// original records and sanitized records of the cohort).
	LogRank survival.LogRank
	// Medians of the KM curves (NaN when a curve never reaches 0.5) and the
	// shift sanitized - original.
	MedianOriginal, MedianSanitized, MedianShift float64
}

// Utility is the result of Measure.
type Utility struct {
	// KL and MAE over all records, cohorts pooled.
	KL, MAE float64
	Cohorts []CohortUtility
}

// Measure computes paper 001's utility measures of san against orig, per
// cohort and pooled. Event flags enter the log-rank statistics and the
// medians only.
func Measure(orig, san Data, opts UtilityOptions) (Utility, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return Utility{}, fmt.Errorf("utility: %w", err)
	}
	if err := orig.Validate(); err != nil {
		return Utility{}, fmt.Errorf("utility: original: %w", err)
	}
	if err := san.Validate(); err != nil {
		return Utility{}, fmt.Errorf("utility: sanitized: %w", err)
	}
	if !slices.Equal(orig.Cohorts, san.Cohorts) {
		return Utility{}, errors.New("utility: original and sanitized cohort label lists differ")
	}
	tmax := o.TimeMax
	if tmax == 0 {
		for _, t := range orig.Time {
			tmax = max(tmax, t)
		}
		for _, t := range san.Time {
			tmax = max(tmax, t)
		}
	}
	if tmax/o.KLBin > 1<<24 {
		return Utility{}, fmt.Errorf("utility: %d kl bins exceed the limit of %d; raise the bin width", tmax/o.KLBin, 1<<24)
	}
	u := Utility{
		KL:      klDivergence(orig.Time, san.Time, o.KLBin, tmax, o.Alpha),
		MAE:     wasserstein1(orig.Time, san.Time),
		Cohorts: make([]CohortUtility, len(orig.Cohorts)),
	}
	om, sm := orig.ByCohort(), san.ByCohort()
	for c := range orig.Cohorts {
		ot, oe := pick(orig, om[c])
		st, se := pick(san, sm[c])
		cu := CohortUtility{NOriginal: len(ot), NSanitized: len(st),
			KL: math.NaN(), MAE: math.NaN(), MedianOriginal: math.NaN(), MedianSanitized: math.NaN(), MedianShift: math.NaN(),
			LogRank: survival.LogRank{ChiSq: math.NaN(), P: math.NaN(), DF: 1}}
		if len(ot) > 0 && len(st) > 0 {
			cu.KL = klDivergence(ot, st, o.KLBin, tmax, o.Alpha)
			cu.MAE = wasserstein1(ot, st)
			tt := append(floatTimes(ot), floatTimes(st)...)
			ee := append(slices.Clone(oe), se...)
			g := make([]int, len(tt))
			for i := len(ot); i < len(g); i++ {
				g[i] = 1
			}
			if lr, err := survival.LogRankTest(tt, ee, g, 2); err == nil {
				cu.LogRank = lr
			}
		}
		if len(ot) > 0 {
			if km, err := survival.KaplanMeier(floatTimes(ot), oe, o.Conf); err == nil {
				cu.MedianOriginal = km.Median
			}
		}
		if len(st) > 0 {
			if km, err := survival.KaplanMeier(floatTimes(st), se, o.Conf); err == nil {
				cu.MedianSanitized = km.Median
			}
		}
		cu.MedianShift = cu.MedianSanitized - cu.MedianOriginal
		u.Cohorts[c] = cu
	}
	return u, nil
}

func pick(d Data, rows []int) ([]int64, []bool) {
	t := make([]int64, len(rows))
	e := make([]bool, len(rows))
	for j, i := range rows {
		t[j], e[j] = d.Time[i], d.Event[i]
	}
	return t, e
}

// klDivergence returns KL(P || Q) in nats between the histograms of a (P)
// and b (Q) over bins of width w on [0, tmax], alpha added to every bin of
// both; NaN when either is empty.
func klDivergence(a, b []int64, w, tmax int64, alpha float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	nb := int(tmax/w) + 1
	ha := make([]float64, nb)
	hb := make([]float64, nb)
	bin := func(t int64) int {
		k := int(max(t, 0) / w)
		return min(k, nb-1)
	}
	for _, t := range a {
		ha[bin(t)]++
	}
	for _, t := range b {
		hb[bin(t)]++
	}
	za := float64(len(a)) + alpha*float64(nb)
	zb := float64(len(b)) + alpha*float64(nb)
	kl := 0.0
	for k := range nb {
		p := (ha[k] + alpha) / za
		q := (hb[k] + alpha) / zb
		kl += p * math.Log(p/q)
	}
	return math.Max(kl, 0)
}

// wasserstein1 returns the integral over u in (0,1) of |F_a^-1(u) - F_b^-1(u)|
// for the empirical distributions of a and b; NaN when either is empty.
func wasserstein1(a, b []int64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	x := slices.Clone(a)
	y := slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	n, m := float64(len(x)), float64(len(y))
	i, j := 0, 0
	u, sum := 0.0, 0.0
	for i < len(x) && j < len(y) {
		ni, nj := float64(i+1)/n, float64(j+1)/m
		next := math.Min(ni, nj)
		sum += (next - u) * math.Abs(float64(x[i]-y[j]))
		u = next
		if ni <= next {
			i++
		}
		if nj <= next {
			j++
		}
	}
	return sum
}

// Pseudonyms recomputes the keyed pseudonyms `dpsurv sanitize` writes for
// ids (sanitizers.Chain with only the pseudonym), so an auditor holding the
// PRF key can join sanitized records to the originals.
func Pseudonyms(key []byte, ids []string) ([]string, error) {
	mem := memory.DefaultAllocator
	chain, err := sanitizers.New(sanitizers.Config{Key: key, Cohorts: []string{"-"}, TimeMax: 1, TimeUnit: "unit", PseudonymizeID: true}, mem)
	if err != nil {
		return nil, fmt.Errorf("pseudonyms: %w", err)
	}
	defer chain.Release()
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendValues(ids, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	out, _, err := chain.Apply(rec)
	if err != nil {
		return nil, fmt.Errorf("pseudonyms: %w", err)
	}
	defer out.Release()
	ps, ok := out.Column(0).(*array.String)
	if !ok {
		return nil, errors.New("pseudonyms: unexpected output column type")
	}
	res := make([]string, ps.Len())
	for i := range res {
		res[i] = ps.Value(i)
	}
	return res, nil
}

// PerRecordMAE joins the records whose pseudonym (computed from the original
// ids by Pseudonyms) equals a sanitized id and returns the mean absolute
// time difference over the joined records, and how many joined (NaN, 0 when
// none did).
func PerRecordMAE(orig Data, pseudonyms []string, san Data) (float64, int, error) {
	if len(pseudonyms) != orig.Len() {
		return 0, 0, fmt.Errorf("per-record mae: %d pseudonyms for %d records", len(pseudonyms), orig.Len())
	}
	if san.ID == nil {
		return 0, 0, errors.New("per-record mae: sanitized data carry no ids")
	}
	idx := make(map[string]int, san.Len())
	for j, id := range san.ID {
		idx[id] = j
	}
	sum, n := 0.0, 0
	for i, p := range pseudonyms {
		j, ok := idx[p]
		if !ok {
			continue
		}
		sum += math.Abs(float64(orig.Time[i] - san.Time[j]))
		n++
	}
	if n == 0 {
		return math.NaN(), 0, nil
	}
	return sum / float64(n), n, nil
}
