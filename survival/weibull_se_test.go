package survival

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestWeibullWaldGoldenR compares the standard errors and Wald limits of
// the Weibull MLE with vcov(survreg) on the clamped, normalised times of
// the three shared datasets, overall and per cohort
// (survival/testdata/weibull_se_golden.json, scripts/golden_summary.R).
func TestWeibullWaldGoldenR(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "weibull_se_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Dataset, Subset string
			Omega           float64
			N, Events       float64
			SEIntercept     float64 `json:"se_intercept"`
			SELogSigma      float64 `json:"se_log_sigma"`
			Cov             float64
			ShapeLowerJ     float64 `json:"shape_lower"`
			ShapeUpperJ     float64 `json:"shape_upper"`
			ScaleLowerJ     float64 `json:"scale_lower"`
			ScaleUpperJ     float64 `json:"scale_upper"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 15 {
		t.Fatalf("only %d cases", len(g.Cases))
	}
	data := map[string]weibullRecords{}
	for _, gc := range g.Cases {
		if _, ok := data[gc.Dataset]; !ok {
			data[gc.Dataset] = readWeibullCSV(t, gc.Dataset)
		}
		t.Run(gc.Dataset+"/"+gc.Subset, func(t *testing.T) {
			ts, ev := weibullCase(data[gc.Dataset], weibullGoldenCase{Dataset: gc.Dataset, Subset: gc.Subset, Variant: "clamped", Omega: gc.Omega})
			c, err := CompressChecked(ts, ev)
			if err != nil {
				t.Fatal(err)
			}
			fit, err := FitWeibull(c)
			if err != nil {
				t.Fatal(err)
			}
			w, err := WeibullWaldIntervals(c, fit.Shape, fit.Scale, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []struct {
				name      string
				got, want float64
			}{
				{"se(intercept)", w.SEIntercept, gc.SEIntercept}, {"se(log sigma)", w.SELogSigma, gc.SELogSigma},
				{"cov", w.Cov, gc.Cov},
				{"shape lower", w.ShapeLower, gc.ShapeLowerJ}, {"shape upper", w.ShapeUpper, gc.ShapeUpperJ},
				{"scale lower", w.ScaleLower, gc.ScaleLowerJ}, {"scale upper", w.ScaleUpper, gc.ScaleUpperJ},
			} {
				if math.Abs(x.got-x.want) > 1e-6*math.Max(math.Abs(x.want), 1e-3) {
					t.Errorf("%s = %.12g, R %.12g", x.name, x.got, x.want)
				}
			}
		})
	}
}

func TestWeibullWaldErrors(t *testing.T) {
	c := Compress([]float64{0.1, 0.5, 0.7}, []bool{true, true, false})
	for _, tc := range []struct{ shape, scale, conf float64 }{{0, 1, 0.95}, {1, 0, 0.95}, {1, 1, 1}, {math.Inf(1), 1, 0.95}} {
		if _, err := WeibullWaldIntervals(c, tc.shape, tc.scale, tc.conf); err == nil {
			t.Errorf("%+v accepted", tc)
		}
	}
}
