package regression

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func TestFitCoxGoldenR(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"lung", "kidney", "flchain"} {
		g := loadGolden(t, name)
		data := loadCSV(t, g.File, g.Covariates)
		for _, want := range g.Cox {
			t.Run(name+"/"+string(want.Ties), func(t *testing.T) {
				res, err := FitCox(data, CoxOptions{Ties: want.Ties, Covariates: g.Covariates}, nil)
				if err != nil {
					t.Fatal(err)
				}
				for j := range want.Beta {
					if !closeRel(res.Beta[j], want.Beta[j], 1e-6, 1e-12) {
						t.Errorf("beta[%d] = %.12g, R %.12g", j, res.Beta[j], want.Beta[j])
					}
					if !closeRel(res.SE[j], want.SE[j], 1e-5, 0) {
						t.Errorf("se[%d] = %.12g, R %.12g", j, res.SE[j], want.SE[j])
					}
				}
				for k := range want.LogLik {
					if !closeRel(res.LogLik[k], want.LogLik[k], 1e-10, 0) {
						t.Errorf("loglik[%d] = %.12g, R %.12g", k, res.LogLik[k], want.LogLik[k])
					}
				}
				if res.Guarantee != GuaranteeNone || res.Projection != nil {
					t.Errorf("labels: %+v", res)
				}
			})
		}
	}
}

// TestCoxTiesDiffer guards against Efron silently computing Breslow (or
// the reverse): with heavy ties the two must differ, without ties agree.
func TestCoxTiesDiffer(t *testing.T) {
	src := dp.NewSeededSource(3)
	d := synthetic(src, 300, 2, 8, -1.5, []float64{1, -1}) // 8 distinct times: heavy ties
	e, err := FitCox(d, CoxOptions{Ties: TiesEfron}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FitCox(d, CoxOptions{Ties: TiesBreslow}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(e.Beta[0]-b.Beta[0]) < 1e-3 {
		t.Errorf("efron %v and breslow %v agree under heavy ties", e.Beta, b.Beta)
	}
	// Breslow shrinks towards zero relative to Efron under ties
	if math.Abs(b.Beta[0]) >= math.Abs(e.Beta[0]) {
		t.Errorf("breslow |%v| not below efron |%v|", b.Beta[0], e.Beta[0])
	}
	for i := range d.Time {
		d.Time[i] += float64(i) * 1e-6 // break every tie
	}
	e, _ = FitCox(d, CoxOptions{Ties: TiesEfron}, nil)
	b, _ = FitCox(d, CoxOptions{Ties: TiesBreslow}, nil)
	for j := range e.Beta {
		if !closeRel(e.Beta[j], b.Beta[j], 1e-12, 1e-14) {
			t.Errorf("no ties: efron %v breslow %v", e.Beta, b.Beta)
		}
	}
}

func TestFitCoxValidation(t *testing.T) {
	src := dp.NewSeededSource(4)
	d := synthetic(src, 40, 2, 10, -1, []float64{1, 1})
	cases := []struct {
		name string
		data Data
		opts CoxOptions
		want string
	}{
		{"bad ties", d, CoxOptions{Ties: "exact"}, "unknown ties"},
		{"no covariates", Data{Time: []float64{1, 2}, Event: []bool{true, true}}, CoxOptions{}, "no covariates"},
		{"collinear", Data{Time: []float64{1, 2, 3, 4}, Event: []bool{true, true, false, true},
			X: [][]float64{{1, 2}, {2, 4}, {3, 6}, {0, 0}}}, CoxOptions{}, "singular"},
		{"no events", Data{Time: []float64{1, 2, 3}, Event: []bool{false, false, false},
			X: [][]float64{{1}, {2}, {3}}}, CoxOptions{}, "singular"},
		{"bad projection", d, CoxOptions{Projection: ProjectionOptions{Kind: "pca", Dims: 1}}, "unknown projection"},
		{"projection dims", d, CoxOptions{Projection: ProjectionOptions{Kind: ProjectionRandom, Dims: 3}}, "projected dimension"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FitCox(c.data, c.opts, src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestHPPCox(t *testing.T) {
	t.Parallel()
	g := loadGolden(t, "lung")
	data := loadCSV(t, g.File, g.Covariates)
	// three sites, assigned by a public rule (row index)
	data.Site = make([]string, data.Len())
	for i := range data.Site {
		data.Site[i] = []string{"a", "b", "c"}[i%3]
	}
	sc := &Scaling{Centre: g.Centre, Scale: g.Scale}
	full, err := FitCox(data, CoxOptions{Scaling: sc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []ProjectionKind{ProjectionRandom, ProjectionOptimal} {
		t.Run(string(kind), func(t *testing.T) {
			src := dp.NewSeededSource(21)
			res, err := FitCox(data, CoxOptions{Scaling: sc, Projection: ProjectionOptions{
				Kind: kind, Dims: 2, TripletsPerSite: 40}}, src)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Projection
			if res.Guarantee != GuaranteeHeuristic || p.Guarantee != GuaranteeHeuristic {
				t.Errorf("guarantee %q / %q, want %q", res.Guarantee, p.Guarantee, GuaranteeHeuristic)
			}
			m := p.Dims
			if m < 1 || m > 2 || (m < 2 && len(p.Warnings) == 0) || len(res.Beta) != m ||
				len(p.B) != 4 || len(p.B[0]) != m || len(p.BetaX) != 4 {
				t.Fatalf("shapes: dims %d, beta %d, B %dx%d, beta_x %d, warnings %v",
					m, len(res.Beta), len(p.B), len(p.B[0]), len(p.BetaX), p.Warnings)
			}
			if kind == ProjectionRandom && m != 2 {
				t.Errorf("random projection: dims %d, want 2", m)
			}
			if kind == ProjectionOptimal && p.Triplets != 120 {
				t.Errorf("triplets %d, want 3 sites x 40", p.Triplets)
			}
			// the projected model cannot beat the full model's partial
			// likelihood, and must improve on the null model
			if res.LogLik[1] > full.LogLik[1]+1e-9 || res.LogLik[1] <= res.LogLik[0] {
				t.Errorf("loglik %v, full model %v", res.LogLik, full.LogLik)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"guarantee":"none (heuristic)"`) {
				t.Errorf("JSON lacks the heuristic label: %s", b)
			}
			t.Logf("%s: loglik %.3f (full %.3f, null %.3f), dims %d, kept %v, beta_x %.3f (full %.3f), warnings %v",
				kind, res.LogLik[1], full.LogLik[1], res.LogLik[0], p.Dims, p.Kept, p.BetaX, full.Beta, p.Warnings)
		})
	}
}
