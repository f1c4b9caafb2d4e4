package eval

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/internal/datasets"
	"github.com/dpsurv/dpsurv/survival"
)

// wbLoadFlchain reads survival's testdata copy of flchain (written by
// scripts/golden_weibull.R: time, event, cohort) compressed, with its
// largest time.
func wbLoadFlchain(t *testing.T) (survival.Compressed, float64) {
	t.Helper()
	rows := datasets.ReadFile(t, filepath.Join("..", "..", "..", "survival", "testdata", "weibull_flchain.csv")).Rows
	var tm []float64
	var ev []bool
	mx := 0.0
	for _, row := range rows {
		v, err := strconv.ParseFloat(row[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		tm = append(tm, v)
		ev = append(ev, row[1] == "1")
		mx = max(mx, v)
	}
	return survival.Compress(tm, ev), mx
}

// TestWeibullUtilityMdAEOrdering runs the utility study on flchain with a few
// repetitions: LSP+TLL beats both baselines on both parameters (paper 002,
// figures 3 and 4), and its errors shrink as epsilon grows.
func TestWeibullUtilityMdAEOrdering(t *testing.T) {
	t.Parallel() // independent CPU-bound generators: the package uses both cores
	fl, flMax := wbLoadFlchain(t)
	res, err := weibullUtility(dp.NewSeededSource(2024), fl, weibull.WeibullConfig{TimeMax: flMax}, []float64{0.2, 1, 3.2}, 25)
	if err != nil {
		t.Fatal(err)
	}
	get := func(eps float64, m string) wbUtilityRow {
		for _, r := range res.Rows {
			if r.Epsilon == eps && r.Method == m {
				return r
			}
		}
		t.Fatalf("no row %v %s", eps, m)
		return wbUtilityRow{}
	}
	for _, eps := range []float64{0.2, 1, 3.2} {
		l, lp, sa := get(eps, "lsp"), get(eps, "laplace"), get(eps, "saa")
		t.Logf("eps %.1f  MdAE shape: lsp %.4g laplace %.4g saa %.4g | scale: lsp %.4g laplace %.4g saa %.4g",
			eps, l.MdAEShape, lp.MdAEShape, sa.MdAEShape, l.MdAEScale, lp.MdAEScale, sa.MdAEScale)
		if !(l.MdAEShape < sa.MdAEShape && l.MdAEShape < lp.MdAEShape) {
			t.Errorf("eps %v: LSP shape MdAE %v not below baselines %v, %v", eps, l.MdAEShape, sa.MdAEShape, lp.MdAEShape)
		}
		if !(l.MdAEScale < sa.MdAEScale && l.MdAEScale < lp.MdAEScale) {
			t.Errorf("eps %v: TLL scale MdAE %v not below baselines %v, %v", eps, l.MdAEScale, sa.MdAEScale, lp.MdAEScale)
		}
	}
	if !(get(3.2, "lsp").MdAEShape < get(0.2, "lsp").MdAEShape) {
		t.Errorf("LSP error does not shrink with epsilon")
	}
	if _, err := weibullUtility(dp.NewSeededSource(1), fl, weibull.WeibullConfig{TimeMax: flMax}, []float64{0}, 3); err == nil {
		t.Error("epsilon 0 accepted")
	}
	if _, err := weibullUtility(dp.NewSeededSource(1), survival.Compress([]float64{1}, []bool{false}), weibull.WeibullConfig{TimeMax: 2}, []float64{1}, 3); err == nil {
		t.Error("sample without MLE accepted")
	}
}
