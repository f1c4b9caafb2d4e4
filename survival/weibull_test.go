package survival

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

type weibullGoldenCase struct {
	Dataset string  `json:"dataset"`
	Subset  string  `json:"subset"`
	Variant string  `json:"variant"`
	TimeMax float64 `json:"time_max"`
	Omega   float64 `json:"omega"`
	N       float64 `json:"n"`
	Events  float64 `json:"events"`
	Shape   float64 `json:"shape"`
	Scale   float64 `json:"scale"`
	LogLik  float64 `json:"loglik"`
	Iters   int     `json:"iterations"`
}

type weibullRecords struct {
	time   []float64
	event  []bool
	cohort []string
}

// readWeibullCSV reads one of the testdata copies written by
// scripts/golden_weibull.R (columns time,event,cohort).
func readWeibullCSV(t *testing.T, name string) weibullRecords {
	t.Helper()
	c := readCSV(t, filepath.Join("testdata", "weibull_"+name+".csv"))
	var r weibullRecords
	for _, row := range c.rows {
		tv, err := strconv.ParseFloat(row[0], 64)
		if err != nil {
			t.Fatalf("%s: time %q: %v", name, row[0], err)
		}
		r.time = append(r.time, tv)
		r.event = append(r.event, row[1] == "1")
		r.cohort = append(r.cohort, row[2])
	}
	return r
}

// weibullCase rebuilds the sample of one golden case exactly as the R script
// does.
func weibullCase(r weibullRecords, gc weibullGoldenCase) ([]float64, []bool) {
	fileMax := 0.0
	for _, v := range r.time {
		fileMax = max(fileMax, v)
	}
	var ts []float64
	var ev []bool
	for i, v := range r.time {
		if gc.Subset != "all" && "cohort="+r.cohort[i] != gc.Subset {
			continue
		}
		switch gc.Variant {
		case "normalised":
			if v <= 0 {
				continue
			}
			v /= fileMax
		case "raw":
			if v <= 0 {
				continue
			}
		case "clamped":
			v = min(max(v/fileMax, math.Exp(-gc.Omega)), 1)
		}
		ts = append(ts, v)
		ev = append(ev, r.event[i])
	}
	return ts, ev
}

func loadWeibullGolden(t *testing.T) []weibullGoldenCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "weibull_golden.json"))
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	var g struct {
		Cases []weibullGoldenCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("parse golden: %v", err)
	}
	if len(g.Cases) < 30 {
		t.Fatalf("golden file has only %d cases", len(g.Cases))
	}
	return g.Cases
}

func weibullRelErr(got, want float64) float64 {
	return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
}

// TestFitWeibullGoldenR compares the MLE with R survreg on the three shared
// datasets, overall and per cohort, normalised, raw and clamped.
func TestFitWeibullGoldenR(t *testing.T) {
	cases := loadWeibullGolden(t)
	data := map[string]weibullRecords{}
	for _, gc := range cases {
		if _, ok := data[gc.Dataset]; !ok {
			data[gc.Dataset] = readWeibullCSV(t, gc.Dataset)
		}
	}
	for _, gc := range cases {
		t.Run(gc.Dataset+"/"+gc.Subset+"/"+gc.Variant, func(t *testing.T) {
			ts, ev := weibullCase(data[gc.Dataset], gc)
			c, err := CompressChecked(ts, ev)
			if err != nil {
				t.Fatal(err)
			}
			fit, err := FitWeibull(c)
			if err != nil {
				t.Fatalf("FitWeibull: %v", err)
			}
			if fit.Records != gc.N || fit.Events != gc.Events {
				t.Fatalf("records/events %v/%v, R %v/%v", fit.Records, fit.Events, gc.N, gc.Events)
			}
			if e := weibullRelErr(fit.Shape, gc.Shape); e > 1e-9 {
				t.Errorf("shape %.15g, R %.15g (rel err %.2g)", fit.Shape, gc.Shape, e)
			}
			if e := weibullRelErr(fit.Scale, gc.Scale); e > 1e-9 {
				t.Errorf("scale %.15g, R %.15g (rel err %.2g)", fit.Scale, gc.Scale, e)
			}
			if d := math.Abs(fit.LogLik - gc.LogLik); d > 1e-6 {
				t.Errorf("loglik %.12g, R %.12g (diff %.2g)", fit.LogLik, gc.LogLik, d)
			}
		})
	}
}

// TestFitWeibullIsMaximum checks the optimum directly: the log-likelihood
// falls when either parameter moves, for a sample with censoring.
func TestFitWeibullIsMaximum(t *testing.T) {
	c := Compress([]float64{3, 7, 7, 12, 15, 20, 22, 30, 41, 41}, []bool{true, true, false, true, true, false, true, true, false, true})
	fit, err := FitWeibull(c)
	if err != nil {
		t.Fatal(err)
	}
	base := WeibullLogLik(c, fit.Shape, fit.Scale)
	for _, d := range []struct{ dp, dl float64 }{{1e-3, 0}, {-1e-3, 0}, {0, 1e-3}, {0, -1e-3}, {1e-3, 1e-3}, {-1e-3, -1e-3}} {
		if ll := WeibullLogLik(c, fit.Shape*(1+d.dp), fit.Scale*(1+d.dl)); ll >= base {
			t.Errorf("loglik at (%v,%v) = %v >= optimum %v", d.dp, d.dl, ll, base)
		}
	}
}

func TestFitWeibullErrors(t *testing.T) {
	tests := []struct {
		name string
		c    Compressed
		want error
	}{
		{"empty", Compressed{}, ErrWeibullNoEvents},
		{"no events", Compress([]float64{1, 2, 3}, []bool{false, false, false}), ErrWeibullNoEvents},
		{"one time", Compress([]float64{5, 5, 5}, []bool{true, true, false}), ErrWeibullNoFiniteMLE},
		{"events only at max", Compress([]float64{1, 2, 9}, []bool{false, false, true}), ErrWeibullNoFiniteMLE},
		{"zero time", Compress([]float64{0, 2, 3}, []bool{true, true, false}), nil},
		{"negative time", Compress([]float64{-1, 2, 3}, []bool{true, true, false}), nil},
		{"unsorted", Compressed{Time: []float64{2, 1}, Events: []float64{1, 1}, Count: []float64{1, 1}}, nil},
		{"events > count", Compressed{Time: []float64{1, 2}, Events: []float64{2, 1}, Count: []float64{1, 1}}, nil},
		{"fractional count", Compressed{Time: []float64{1, 2}, Events: []float64{0, 1}, Count: []float64{0.5, 1}}, nil},
		{"only empty groups", Compressed{Time: []float64{1, 2}, Events: []float64{0, 0}, Count: []float64{0, 0}}, ErrWeibullNoEvents},
		{"length mismatch", Compressed{Time: []float64{1, 2}, Events: []float64{1}, Count: []float64{1, 1}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FitWeibull(tc.c)
			if err == nil {
				t.Fatal("expected an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCompress(t *testing.T) {
	tests := []struct {
		name  string
		time  []float64
		event []bool
		want  Compressed
	}{
		{"empty", nil, nil, Compressed{Time: []float64{}, Events: []float64{}, Count: []float64{}}},
		{"groups and sorts", []float64{5, 1, 5, 3, 1, 5}, []bool{true, false, false, true, true, true},
			Compressed{Time: []float64{1, 3, 5}, Events: []float64{1, 1, 2}, Count: []float64{2, 1, 3}}},
		{"skips non-finite", []float64{2, math.NaN(), math.Inf(1), 2}, []bool{true, true, true, false},
			Compressed{Time: []float64{2}, Events: []float64{1}, Count: []float64{2}}},
		{"negative zero folds", []float64{math.Copysign(0, -1), 0}, []bool{true, false},
			Compressed{Time: []float64{0}, Events: []float64{1}, Count: []float64{2}}},
		{"shorter event slice", []float64{1, 2, 3}, []bool{true},
			Compressed{Time: []float64{1}, Events: []float64{1}, Count: []float64{1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Compress(tc.time, tc.event)
			if !slices.Equal(got.Time, tc.want.Time) || !slices.Equal(got.Events, tc.want.Events) || !slices.Equal(got.Count, tc.want.Count) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
	if _, err := CompressChecked([]float64{1, 2}, []bool{true}); err == nil {
		t.Error("CompressChecked accepted mismatched lengths")
	}
	if _, err := CompressChecked([]float64{1, math.NaN()}, []bool{true, true}); err == nil {
		t.Error("CompressChecked accepted NaN")
	}
}

// TestFitWeibullIgnoresEmptyGroups: a group with count 0 (even at the
// largest time) does not change the fit.
func TestFitWeibullIgnoresEmptyGroups(t *testing.T) {
	a := Compressed{Time: []float64{1, 2, 4, 6}, Events: []float64{1, 1, 0, 1}, Count: []float64{1, 2, 1, 3}}
	b := Compressed{Time: []float64{1, 2, 3, 4, 6, 50}, Events: []float64{1, 1, 0, 0, 1, 0}, Count: []float64{1, 2, 0, 1, 3, 0}}
	fa, err := FitWeibull(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := FitWeibull(b)
	if err != nil {
		t.Fatal(err)
	}
	if weibullRelErr(fa.Shape, fb.Shape) > 1e-12 || weibullRelErr(fa.Scale, fb.Scale) > 1e-12 || weibullRelErr(fa.LogLik, fb.LogLik) > 1e-12 {
		t.Fatalf("empty groups changed the fit: %+v vs %+v", fa, fb)
	}
}
