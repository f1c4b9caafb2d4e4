package stattest

import (
	"math"
	"testing"
)

// PooledChiSquare on hand-worked cases: cells at or above 5 expected each
// add (o-e)^2/e, the ones below pool into one cell, and an impossible
// observation is +Inf.
func TestPooledChiSquare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		obs, exp []float64
		stat     float64
		df       int
	}{
		{"no pooling", []float64{12, 8}, []float64{10, 10}, 0.4 + 0.4, 1},
		// 2 and 3 pool into 5 expected against 1 + 6 = 7 observed: 4/5
		{"tail pooled", []float64{20, 23, 1, 6}, []float64{25, 20, 2, 3}, 1 + 0.45 + 0.8, 2},
		{"nothing to pool", []float64{5, 5, 0}, []float64{5, 5, 0}, 0, 1},
		{"impossible draw", []float64{5, 4, 1}, []float64{5, 5, 0}, math.Inf(1), 1},
	} {
		stat, df := PooledChiSquare(tc.obs, tc.exp)
		if math.Abs(stat-tc.stat) > 1e-12 && !(math.IsInf(tc.stat, 1) && math.IsInf(stat, 1)) || df != tc.df {
			t.Errorf("%s: PooledChiSquare = %v on %d df, want %v on %d", tc.name, stat, df, tc.stat, tc.df)
		}
	}
}

// ChiSquareCritical at textbook values: 3.841 (1 df, 0.05), 16.266 (3 df,
// 0.001).
func TestChiSquareCritical(t *testing.T) {
	for _, tc := range []struct {
		df    int
		alpha float64
		c     float64
	}{{1, 0.05, 3.8415}, {3, 0.001, 16.2662}} {
		if got := ChiSquareCritical(tc.df, tc.alpha); math.Abs(got-tc.c) > 1e-3 {
			t.Errorf("ChiSquareCritical(%d, %v) = %.4f, want %.4f", tc.df, tc.alpha, got, tc.c)
		}
	}
}
