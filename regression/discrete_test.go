package regression

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func TestLinkPairDerivatives(t *testing.T) {
	zs := []float64{-40, -12, -5, -1.3, -1e-4, 0, 0.7, 3, 9, 25}
	for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
		for _, y := range []bool{false, true} {
			for _, z := range zs {
				const h = 1e-5
				l, g, hh := link.pair(z, y)
				lp, gp, _ := link.pair(z+h, y)
				lm, gm, _ := link.pair(z-h, y)
				fdG := (lp - lm) / (2 * h)
				fdH := (gp - gm) / (2 * h)
				if math.IsNaN(l) || math.IsInf(l, 0) || l < 0 {
					t.Errorf("%s y=%v z=%v: loss %v", link, y, z, l)
				}
				if !closeRel(g, fdG, 1e-5, 1e-8) {
					t.Errorf("%s y=%v z=%v: g = %v, finite difference %v", link, y, z, g, fdG)
				}
				if !closeRel(hh, fdH, 1e-4, 1e-8) {
					t.Errorf("%s y=%v z=%v: h = %v, finite difference %v", link, y, z, hh, fdH)
				}
			}
		}
	}
}

// personPeriod evaluates the loss, gradient and Hessian on the explicit
// person-period expansion: the reference for the compact evaluator.
func personPeriod(m *discreteModel, f []float64) (float64, []float64, []float64) {
	dim := m.dim()
	grad := make([]float64, dim)
	hess := make([]float64, dim*dim)
	var loss float64
	row := make([]float64, dim)
	for i := 0; i < m.n; i++ {
		for s := 1; s <= int(m.s[i]); s++ {
			copy(row, m.basisRow(s))
			copy(row[m.e:], m.x[i*m.p:(i+1)*m.p])
			var z float64
			for j, v := range row {
				z += f[j] * v
			}
			l, g, h := m.link.pair(z, s == int(m.s[i]) && m.event[i])
			loss += l
			for a := range row {
				grad[a] += g * row[a]
				for b := range row {
					hess[a*dim+b] += h * row[a] * row[b]
				}
			}
		}
	}
	return loss, grad, hess
}

func TestCompactEvaluatorMatchesPersonPeriod(t *testing.T) {
	t.Parallel()
	src := dp.NewSeededSource(11)
	data := synthetic(src, 3000, 3, 40, -2.5, []float64{1, -0.5, 0.8})
	for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
		for _, f := range [][]float64{
			{-3, 0.5, -1, 0.4, -0.2, 0.9},
			{-1, 2, 1, -2, 1.5, 0.3},
			{14, -3, 2, 9, -8, 7}, // far from the fast path's range
		} {
			opts := DiscreteOptions{Method: MethodMLE, Link: link, Intervals: 40, TimeMax: 1}
			pr, err := prepareDiscrete(data, &opts)
			if err != nil {
				t.Fatal(err)
			}
			m := pr.m
			grad := make([]float64, m.dim())
			hess := make([]float64, m.dim()*m.dim())
			loss := m.eval(f, grad, hess)
			rl, rg, rh := personPeriod(m, f)
			if !closeRel(loss, rl, 1e-11, 1e-9) {
				t.Errorf("%s f=%v: loss %v, person-period %v", link, f, loss, rl)
			}
			for j := range grad {
				if !closeRel(grad[j], rg[j], 1e-10, 1e-8) {
					t.Errorf("%s f=%v: grad[%d] %v, person-period %v", link, f, j, grad[j], rg[j])
				}
			}
			for j := range hess {
				if !closeRel(hess[j], rh[j], 1e-10, 1e-8) {
					t.Errorf("%s f=%v: hess[%d] %v, person-period %v", link, f, j, hess[j], rh[j])
				}
			}
			// per-record routine (pSGLD) sums to the same loss and gradient
			st := m.newState()
			m.prepare(st, f[:m.e])
			gi := make([]float64, m.dim())
			sum := make([]float64, m.dim())
			var tot float64
			for i := 0; i < m.n; i++ {
				tot += m.recordLossGrad(i, f[m.e:], st, gi)
				for j := range sum {
					sum[j] += gi[j]
				}
			}
			if !closeRel(tot, rl, 1e-11, 1e-9) {
				t.Errorf("%s f=%v: per-record loss %v, person-period %v", link, f, tot, rl)
			}
			for j := range sum {
				if !closeRel(sum[j], rg[j], 1e-10, 1e-8) {
					t.Errorf("%s f=%v: per-record grad[%d] %v, person-period %v", link, f, j, sum[j], rg[j])
				}
			}
		}
	}
}

func TestSplineBasis(t *testing.T) {
	a, err := SplineBasis(200, 3)
	if err != nil {
		t.Fatal(err)
	}
	// e = 3: knots 0, 0.5, 1; b3(t) = d1(t) - d2(t) = t^3 - 2 max(t-0.5,0)^3
	for _, s := range []int{1, 57, 100, 101, 200} {
		tt := float64(s) / 200
		want := tt*tt*tt - 2*math.Pow(math.Max(tt-0.5, 0), 3)
		row := a[s-1]
		if row[0] != 1 || row[1] != tt || math.Abs(row[2]-want) > 1e-15 {
			t.Errorf("A_%d = %v, want [1 %v %v]", s, row, tt, want)
		}
	}
	for _, bad := range [][2]int{{0, 3}, {200, 1}} {
		if _, err := SplineBasis(bad[0], bad[1]); err == nil {
			t.Errorf("SplineBasis(%d, %d): no error", bad[0], bad[1])
		}
	}
	for _, c := range []struct {
		t    float64
		want int
	}{{0, 1}, {1e-9, 1}, {0.005, 1}, {0.00500001, 2}, {0.5, 100}, {1, 200}} {
		if got := intervalOf(c.t, 200); got != c.want {
			t.Errorf("intervalOf(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}

func TestFitDiscreteGoldenR(t *testing.T) {
	t.Parallel() // heavy: runs beside the other heavy tests
	for _, name := range []string{"lung", "kidney", "flchain"} {
		g := loadGolden(t, name)
		data := loadCSV(t, g.File, g.Covariates)
		if data.Len() != g.N {
			t.Fatalf("%s: %d complete rows, R used %d", name, data.Len(), g.N)
		}
		for _, want := range g.Discrete {
			t.Run(name+"/"+string(want.Link), func(t *testing.T) {
				t.Parallel() // the fits are independent (goldenMLE: each once per binary)
				res := goldenMLE(t, g, data, want.Link)
				if res.Clipped != g.Clipped {
					t.Errorf("clipped rows %d, R %d", res.Clipped, g.Clipped)
				}
				checkCoefficientsR(t, res, want.Alpha, want.Beta)
				if !closeRel(*res.LogLik, want.LogLik, 1e-9, 0) {
					t.Errorf("loglik = %.12g, R %.12g", *res.LogLik, want.LogLik)
				}
				if res.Guarantee != GuaranteeNone || !math.IsInf(float64(res.Epsilon), 1) || res.NNoisy {
					t.Errorf("non-private labels wrong: %+v", res)
				}
			})
		}
	}
}

func TestFitDiscreteValidation(t *testing.T) {
	src := dp.NewSeededSource(1)
	data := synthetic(src, 50, 2, 10, -1, []float64{0.5, 0.5})
	cases := []struct {
		name string
		opts DiscreteOptions
		want string
	}{
		{"no method", DiscreteOptions{}, "method is required"},
		{"bad link", DiscreteOptions{Method: MethodMLE, Link: "cauchit"}, "unknown link"},
		{"private without time max", DiscreteOptions{Method: MethodOutput, Epsilon: 1}, "public time max"},
		{"private data-derived scaling", DiscreteOptions{Method: MethodPSGLD, Epsilon: 1, TimeMax: 1, DataDerivedScaling: true}, "non-private path only"},
		{"no epsilon", DiscreteOptions{Method: MethodOutput, TimeMax: 1}, "epsilon must be positive"},
		{"infinite epsilon", DiscreteOptions{Method: MethodObjective, TimeMax: 1, Epsilon: math.Inf(1)}, "epsilon must be positive"},
		{"perturbation with probit", DiscreteOptions{Method: MethodOutput, TimeMax: 1, Epsilon: 1, Link: LinkProbit}, "logit and cloglog links only"},
		{"bad scale", DiscreteOptions{Method: MethodMLE, Scaling: Scaling{Scale: []float64{1, 0}}}, "scale 1 must be positive"},
		{"scale length", DiscreteOptions{Method: MethodMLE, Scaling: Scaling{Centre: []float64{1}}}, "centre has 1 entries"},
		{"negative lambda", DiscreteOptions{Method: MethodOutput, TimeMax: 1, Epsilon: 1, Lambda: -1}, "lambda must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FitDiscrete(data, c.opts, src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	bad := Data{Time: []float64{1, math.NaN()}, Event: []bool{true, false}, X: [][]float64{{1}, {2}}}
	if _, err := FitDiscrete(bad, DiscreteOptions{Method: MethodMLE}, nil); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("NaN time: error %v", err)
	}
	ragged := Data{Time: []float64{1, 2}, Event: []bool{true, false}, X: [][]float64{{1}, {2, 3}}}
	if _, err := FitDiscrete(ragged, DiscreteOptions{Method: MethodMLE}, nil); err == nil {
		t.Error("ragged X: no error")
	}
}

func TestDiscreteResultJSON(t *testing.T) {
	src := dp.NewSeededSource(5)
	data := synthetic(src, 400, 2, 20, -2, []float64{1, -1})
	for _, m := range []Method{MethodMLE, MethodOutput, MethodObjective, MethodPSGLD} {
		res, err := FitDiscrete(data, DiscreteOptions{Method: m, Epsilon: 2, TimeMax: 1, Intervals: 20,
			PSGLD: PSGLDOptions{Steps: 50}}, src)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("%s: marshal: %v", m, err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"alpha", "beta", "method", "epsilon", "guarantee", "neighbouring", "n"} {
			if _, ok := back[k]; !ok {
				t.Errorf("%s: JSON lacks %q: %s", m, k, b)
			}
		}
		_, hasLL := back["loglik"]
		if hasLL != (m == MethodMLE) {
			t.Errorf("%s: loglik present = %v", m, hasLL)
		}
		want := map[Method]string{MethodMLE: GuaranteeNone, MethodOutput: GuaranteePureDPCertified,
			MethodObjective: GuaranteeObjective, MethodPSGLD: GuaranteeMCMC}[m]
		if back["guarantee"] != want {
			t.Errorf("%s: guarantee %v, want %q", m, back["guarantee"], want)
		}
		if e, present := back["epsilon"]; m == MethodMLE && (!present || e != nil) {
			t.Errorf("mle: epsilon %v, want null", back["epsilon"])
		}
		if m != MethodMLE {
			if back["n_noisy"] != false || back["neighbouring"] != NeighbouringReplaceOne || back["n"] != float64(data.Len()) {
				t.Errorf("%s: n_noisy %v neighbouring %v n %v", m, back["n_noisy"], back["neighbouring"], back["n"])
			}
			pub, _ := back["public"].([]any)
			if len(pub) == 0 || pub[0] != "n" || back["fallback"] != false {
				t.Errorf("%s: public %v fallback %v", m, back["public"], back["fallback"])
			}
		}
		if _, ok := back["Clipped"]; ok {
			t.Errorf("%s: exact clip count leaked into JSON", m)
		}
	}
}
