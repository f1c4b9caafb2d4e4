package cli

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

// The Cox figure's curve is R's survfit(coxph) at the covariate means with
// the Breslow cumulative hazard (golden values from
// testdata/cox_curve.R, at R's coefficients), and `fit cox --plot` draws
// it over the KM at publication width.
func TestCoxMeanSurvivalMatchesR(t *testing.T) {
	var tt []float64
	var ee []bool
	var x [][]float64
	for _, r := range readGolden(t, datasets.Path(t, "lung_tte.csv")) {
		age, e1 := strconv.ParseFloat(r["age"], 64)
		ecog, e2 := strconv.ParseFloat(r["ph.ecog"], 64)
		tm, _ := strconv.ParseFloat(r["time"], 64)
		if e1 != nil || e2 != nil {
			continue // NA, as R drops it
		}
		tt, ee, x = append(tt, tm), append(ee, r["event"] == "1"), append(x, []float64{age, ecog})
	}
	ts, sv, err := coxMeanSurvival(tt, ee, x, []float64{0.0123319792005, 0.434964170341}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		i    int
		t, s float64
	}{{0, 5, 0.995542128384}, {9, 54, 0.946040641223}, {49, 207, 0.700810173934}, {99, 460, 0.340095700607}} {
		if ts[g.i] != g.t || math.Abs(sv[g.i]-g.s) > 1e-9 {
			t.Errorf("event time %d: (%v, %.12f), R (%v, %.12f)", g.i+1, ts[g.i], sv[g.i], g.t, g.s)
		}
	}
	out := filepath.Join(t.TempDir(), "cox.png")
	runOK(t, "fit", "cox", "--input", "../../../data/lung_tte.csv", "--epsilon", "inf", "--covariates", "age,ph.ecog", "--cohorts", "1,2", "--plot", out)
	pf, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	img, err := png.DecodeConfig(pf)
	if err != nil || img.Width < 1600 {
		t.Fatalf("figure: %v, %d px wide", err, img.Width)
	}
}
