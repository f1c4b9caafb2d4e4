package survival

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// LogRank is the log-rank test of equal survival across groups, as R's
// survdiff(Surv(time, event) ~ group) (rho = 0).
//
// ChiSq = (O-E)' V^-1 (O-E) over the groups with a positive expected count,
// the first of them dropped; DF is their number minus one (survdiff's df);
// P is the upper tail of the chi-square distribution with DF degrees of
// freedom. When fewer than two groups have a positive expected count the
// test is undefined: ChiSq is 0 and P is NaN.
type LogRank struct {
	ChiSq float64 `json:"chisq"`
	DF    int     `json:"df"`
	P     float64 `json:"p"`
	// Observed and Expected events per group, Variance the covariance
	// matrix of Observed - Expected (survdiff's obs, exp, var).
	Observed []float64   `json:"observed"`
	Expected []float64   `json:"expected"`
	Variance [][]float64 `json:"variance"`
}

// Pairwise is the log-rank test restricted to groups A < B (survdiff on the
// two-group subset of the data).
type Pairwise struct {
	A     int     `json:"a"`
	B     int     `json:"b"`
	ChiSq float64 `json:"chisq"`
	DF    int     `json:"df"`
	P     float64 `json:"p"`
}

// LogRankTest runs the log-rank test on records: group[i] in [0, nGroups)
// labels record i, nGroups >= 2.
func LogRankTest(time []float64, event []bool, group []int, nGroups int) (LogRank, error) {
	nRisk, nEvent, err := logRankCounts(time, event, group, nGroups)
	if err != nil {
		return LogRank{}, fmt.Errorf("log-rank: %w", err)
	}
	return logRankFromValidCounts(nRisk, nEvent)
}

// PairwiseLogRank runs the log-rank test on every pair of groups a < b, in
// the order (0,1), (0,2), ..., (1,2), ...
func PairwiseLogRank(time []float64, event []bool, group []int, nGroups int) ([]Pairwise, error) {
	nRisk, nEvent, err := logRankCounts(time, event, group, nGroups)
	if err != nil {
		return nil, fmt.Errorf("pairwise log-rank: %w", err)
	}
	return pairwiseFromValidCounts(nRisk, nEvent)
}

func logRankCounts(time []float64, event []bool, group []int, nGroups int) (nRisk, nEvent [][]float64, err error) {
	if nGroups < 2 {
		return nil, nil, fmt.Errorf("need at least 2 groups, got %d", nGroups)
	}
	if len(time) != len(event) || len(time) != len(group) {
		return nil, nil, fmt.Errorf("length mismatch (time %d, event %d, group %d)", len(time), len(event), len(group))
	}
	if len(time) == 0 {
		return nil, nil, fmt.Errorf("no records")
	}
	tab, err := kmTabulate(time, event, group, nGroups)
	if err != nil {
		return nil, nil, err
	}
	nRisk = make([][]float64, nGroups)
	nEvent = make([][]float64, nGroups)
	for g := 0; g < nGroups; g++ {
		nRisk[g], nEvent[g], _ = tab.atRisk(g)
	}
	return nRisk, nEvent, nil
}

// LogRankFromCounts runs the log-rank test from per-group counts on a common
// time grid: nRisk[g][i] at risk and nEvent[g][i] events of group g at grid
// time i. Counts may be non-integer (debiased or post-processed noisy counts)
// but must be finite with 0 <= nEvent <= nRisk. Grid times where nobody has
// an event contribute nothing, so any grid containing the event times works.
func LogRankFromCounts(nRisk, nEvent [][]float64) (LogRank, error) {
	if err := validateLogRankCounts(nRisk, nEvent); err != nil {
		return LogRank{}, fmt.Errorf("log-rank from counts: %w", err)
	}
	return logRankFromValidCounts(nRisk, nEvent)
}

// PairwiseLogRankFromCounts runs LogRankFromCounts on every pair of groups.
func PairwiseLogRankFromCounts(nRisk, nEvent [][]float64) ([]Pairwise, error) {
	if err := validateLogRankCounts(nRisk, nEvent); err != nil {
		return nil, fmt.Errorf("pairwise log-rank from counts: %w", err)
	}
	return pairwiseFromValidCounts(nRisk, nEvent)
}

func validateLogRankCounts(nRisk, nEvent [][]float64) error {
	if len(nRisk) < 2 || len(nEvent) != len(nRisk) {
		return fmt.Errorf("need at least 2 groups with at-risk and event counts (got %d and %d)", len(nRisk), len(nEvent))
	}
	m := len(nRisk[0])
	for g := range nRisk {
		if len(nRisk[g]) != m || len(nEvent[g]) != m {
			return fmt.Errorf("group %d: counts not on the common grid of %d times", g, m)
		}
		for i := 0; i < m; i++ {
			r, d := nRisk[g][i], nEvent[g][i]
			if !kmFinite(r) || !kmFinite(d) || d < 0 || d > r {
				return fmt.Errorf("group %d, time %d: need finite 0 <= n_event <= n_risk (n_risk %v, n_event %v)", g, i, r, d)
			}
		}
	}
	return nil
}

func pairwiseFromValidCounts(nRisk, nEvent [][]float64) ([]Pairwise, error) {
	k := len(nRisk)
	out := make([]Pairwise, 0, k*(k-1)/2)
	for a := 0; a < k; a++ {
		for b := a + 1; b < k; b++ {
			lr, err := logRankFromValidCounts([][]float64{nRisk[a], nRisk[b]}, [][]float64{nEvent[a], nEvent[b]})
			if err != nil {
				return nil, fmt.Errorf("pair (%d, %d): %w", a, b, err)
			}
			out = append(out, Pairwise{A: a, B: b, ChiSq: lr.ChiSq, DF: lr.DF, P: lr.P})
		}
	}
	return out, nil
}

// logRankFromValidCounts is survdiff2.c's accumulation followed by
// survdiff's generalized-inverse chi-square.
func logRankFromValidCounts(nRisk, nEvent [][]float64) (LogRank, error) {
	k := len(nRisk)
	m := len(nRisk[0])
	obs := make([]float64, k)
	exp := make([]float64, k)
	v := make([][]float64, k)
	for g := range v {
		v[g] = make([]float64, k)
	}
	for i := 0; i < m; i++ {
		n, d := 0.0, 0.0
		for g := 0; g < k; g++ {
			n += nRisk[g][i]
			d += nEvent[g][i]
			obs[g] += nEvent[g][i]
		}
		if !(d > 0) || !(n > 0) {
			continue
		}
		for g := 0; g < k; g++ {
			exp[g] += d * nRisk[g][i] / n
		}
		if n <= 1 {
			continue // one subject: no variance
		}
		for j := 0; j < k; j++ {
			tmp := d * nRisk[j][i] * (n - d) / (n * (n - 1))
			v[j][j] += tmp
			for l := 0; l < k; l++ {
				v[j][l] -= tmp * nRisk[l][i] / n
			}
		}
	}
	res := LogRank{Observed: obs, Expected: exp, Variance: v}
	var keep []int
	for g := 0; g < k; g++ {
		if exp[g] > 0 {
			keep = append(keep, g)
		}
	}
	res.DF = len(keep) - 1
	if len(keep) < 2 {
		res.P = math.NaN()
		return res, nil
	}
	keep = keep[1:]
	q := len(keep)
	a := make([][]float64, q)
	b := make([]float64, q)
	for r, g := range keep {
		a[r] = make([]float64, q)
		for c, h := range keep {
			a[r][c] = v[g][h]
		}
		b[r] = obs[g] - exp[g]
	}
	x, err := kmSolve(a, append([]float64(nil), b...))
	if err != nil {
		return LogRank{}, fmt.Errorf("log-rank variance matrix: %w", err)
	}
	chi := 0.0
	for r := range x {
		chi += x[r] * b[r]
	}
	res.ChiSq = chi
	res.P = distuv.ChiSquared{K: float64(res.DF)}.Survival(chi)
	return res, nil
}

// kmSolve solves a x = b by Gaussian elimination with partial pivoting
// (LAPACK dgesv's algorithm, as R's solve); a and b are overwritten.
func kmSolve(a [][]float64, b []float64) ([]float64, error) {
	n := len(b)
	scale := 0.0
	for i := range a {
		for j := range a[i] {
			scale = math.Max(scale, math.Abs(a[i][j]))
		}
	}
	if !(scale > 0) {
		return nil, fmt.Errorf("singular (all zero)")
	}
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) <= 1e-13*scale {
			return nil, fmt.Errorf("singular (pivot %d)", c)
		}
		a[c], a[p] = a[p], a[c]
		b[c], b[p] = b[p], b[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			if f == 0 {
				continue
			}
			for j := c; j < n; j++ {
				a[r][j] -= f * a[c][j]
			}
			b[r] -= f * b[c]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for j := r + 1; j < n; j++ {
			s -= a[r][j] * x[j]
		}
		x[r] = s / a[r][r]
	}
	return x, nil
}
