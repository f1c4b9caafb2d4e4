package regression

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// gridData is synthetic's data with every covariate rounded to one of
// levels values: levels^p covariate patterns at most.
func gridData(src dp.Source, n, p, q, levels int) Data {
	beta := make([]float64, p)
	for j := range beta {
		beta[j] = 0.9 - 0.6*float64(j)
	}
	d := synthetic(src, n, p, q, -2.5, beta)
	for _, x := range d.X {
		for j, v := range x {
			x[j] = math.Round(v*float64(levels)) / float64(levels)
		}
	}
	return d
}

// TestGroupedEvaluatorMatchesPersonPeriod: the loss, gradient and Hessian
// from the (pattern, interval) cells equal those of the explicit
// person-period rows, for every link, inside and outside the logit fast
// path's range, with one worker and several.
func TestGroupedEvaluatorMatchesPersonPeriod(t *testing.T) {
	t.Parallel()
	data := gridData(dp.NewSeededSource(12), 4000, 3, 40, 3)
	for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
		opts := DiscreteOptions{Method: MethodMLE, Link: link, Intervals: 40, TimeMax: 1}
		pr, err := prepareDiscrete(data, &opts)
		if err != nil {
			t.Fatal(err)
		}
		m := pr.m
		m.groups = groupPatterns(m)
		if m.groups == nil {
			t.Fatal("groupPatterns declined data with few covariate patterns")
		}
		if m.groups.g > 7*7*7 || m.groups.cells*groupingGain > 4000*20 {
			t.Fatalf("%d patterns, %d cells: not grouped as expected", m.groups.g, m.groups.cells)
		}
		for _, workers := range []int{1, 3} {
			m.workers = workers
			for _, f := range [][]float64{
				{-3, 0.5, -1, 0.4, -0.2, 0.9},
				{-1, 2, 1, -2, 1.5, 0.3},
				{14, -3, 2, 9, -8, 7}, // far from the fast path's range
			} {
				grad := make([]float64, m.dim())
				hess := make([]float64, m.dim()*m.dim())
				loss := m.eval(f, grad, hess)
				rl, rg, rh := personPeriod(m, f)
				if !closeRel(loss, rl, 1e-11, 1e-9) {
					t.Errorf("%s workers=%d f=%v: loss %v, person-period %v", link, workers, f, loss, rl)
				}
				if lo := m.eval(f, nil, nil); lo != loss {
					t.Errorf("%s workers=%d f=%v: loss alone %v, with derivatives %v", link, workers, f, lo, loss)
				}
				for j := range grad {
					if !closeRel(grad[j], rg[j], 1e-10, 1e-8) {
						t.Errorf("%s workers=%d f=%v: grad[%d] %v, person-period %v", link, workers, f, j, grad[j], rg[j])
					}
				}
				for j := range hess {
					if !closeRel(hess[j], rh[j], 1e-10, 1e-8) {
						t.Errorf("%s workers=%d f=%v: hess[%d] %v, person-period %v", link, workers, f, j, hess[j], rh[j])
					}
				}
			}
		}
	}
}

// TestGroupPatternsDeclines: continuous covariates (every row its own
// pattern) and too few person-periods per pattern are fitted record by
// record.
func TestGroupPatternsDeclines(t *testing.T) {
	for _, c := range []struct {
		name string
		data Data
		q    int
	}{
		{"continuous", synthetic(dp.NewSeededSource(3), 5000, 3, 40, -2.5, []float64{1, -0.5, 0.8}), 40},
		// 3 intervals, 60 records: about 25 patterns of 2 to 3 cells each
		// for about 120 person-periods
		{"few records per pattern", gridData(dp.NewSeededSource(4), 60, 2, 3, 3), 3},
	} {
		opts := DiscreteOptions{Method: MethodMLE, Intervals: c.q, TimeMax: 1}
		pr, err := prepareDiscrete(c.data, &opts)
		if err != nil {
			t.Fatal(err)
		}
		if g := groupPatterns(pr.m); g != nil {
			t.Errorf("%s: grouped into %d patterns, %d cells", c.name, g.g, g.cells)
		}
	}
}

// TestFitDiscreteGroupedMatchesRecords: the non-private fit on grouped
// data gives the record-by-record fit's estimates, log-likelihood and
// standard errors to roundoff, for every link.
func TestFitDiscreteGroupedMatchesRecords(t *testing.T) {
	t.Parallel()
	data := gridData(dp.NewSeededSource(5), 20000, 3, 50, 4)
	for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
		opts := DiscreteOptions{Method: MethodMLE, Link: link, Intervals: 50, TimeMax: 1}
		grouped, err := FitDiscrete(data, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.noGroups = true
		records, err := FitDiscrete(data, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		pairs := [][2][]float64{
			{grouped.Alpha, records.Alpha}, {grouped.Beta, records.Beta},
			{grouped.AlphaSE, records.AlphaSE}, {grouped.BetaSE, records.BetaSE},
			{[]float64{*grouped.LogLik}, []float64{*records.LogLik}},
		}
		for k, pr := range pairs {
			if len(pr[0]) != len(pr[1]) || len(pr[0]) == 0 {
				t.Fatalf("%s: field %d: lengths %d, %d", link, k, len(pr[0]), len(pr[1]))
			}
			for j := range pr[0] {
				if !closeRel(pr[0][j], pr[1][j], 1e-9, 1e-12) {
					t.Errorf("%s: field %d [%d]: grouped %.15g, records %.15g", link, k, j, pr[0][j], pr[1][j])
				}
			}
		}
	}
}

// TestFitDiscreteGroupedGoldenR: lung with its discrete covariates only
// (ph.ecog, ph.karno), fitted from the (pattern, interval) cells, against
// R's glm on the person-period rows (scripts/golden_regression.R).
func TestFitDiscreteGroupedGoldenR(t *testing.T) {
	g := loadGolden(t, "lung_ecog")
	data := loadCSV(t, g.File, g.Covariates)
	if data.Len() != g.N {
		t.Fatalf("%d complete rows, R used %d", data.Len(), g.N)
	}
	// the standard errors R printed (golden's type leaves them out)
	var extra struct {
		Discrete []struct {
			Link Link      `json:"link"`
			SE   []float64 `json:"se"`
		} `json:"discrete"`
	}
	b, err := os.ReadFile(filepath.Join("testdata", "lung_ecog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &extra); err != nil {
		t.Fatal(err)
	}
	ses := map[Link][]float64{}
	for _, d := range extra.Discrete {
		ses[d.Link] = d.SE
	}
	for _, want := range g.Discrete {
		if len(ses[want.Link]) != len(want.Alpha)+len(want.Beta) {
			t.Fatalf("%s: %d standard errors in the golden", want.Link, len(ses[want.Link]))
		}
		t.Run(string(want.Link), func(t *testing.T) {
			opts := DiscreteOptions{
				Method: MethodMLE, Link: want.Link, Intervals: g.Intervals, Knots: g.Knots,
				TimeMax: g.TimeMax, Scaling: Scaling{Centre: g.Centre, Scale: g.Scale},
				Covariates: g.Covariates,
			}
			pr, err := prepareDiscrete(data, &opts)
			if err != nil {
				t.Fatal(err)
			}
			if groupPatterns(pr.m) == nil {
				t.Fatal("not grouped: this golden would not test the grouped path")
			}
			res, err := FitDiscrete(data, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkCoefficientsR(t, res, want.Alpha, want.Beta)
			// R's vcov uses the expected information, which is the observed
			// one (ours) for the canonical logit link only
			for j, w := range ses[want.Link] {
				if want.Link != LinkLogit {
					break
				}
				got := append(append([]float64(nil), res.AlphaSE...), res.BetaSE...)
				if !closeRel(got[j], w, 1e-6, 1e-9) {
					t.Errorf("se[%d] = %.10g, R %.10g", j, got[j], w)
				}
			}
			if !closeRel(*res.LogLik, want.LogLik, 1e-9, 0) {
				t.Errorf("loglik = %.12g, R %.12g", *res.LogLik, want.LogLik)
			}
		})
	}
}
