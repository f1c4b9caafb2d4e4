package regression

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func goldenProblem(t testing.TB, name string) (Data, DiscreteOptions) {
	g := loadGolden(t, name)
	data := loadCSV(t, g.File, g.Covariates)
	return data, DiscreteOptions{TimeMax: g.TimeMax, Scaling: Scaling{Centre: g.Centre, Scale: g.Scale}}
}

// TestEvaluateMRE runs the evaluation helpers briefly on lung. With a very
// large budget every method must land near f* up to its own bias:
// Ext-Out-Pert and Ext-Obj-Pert at their ridge minimiser, pSGLD at the
// minimiser of the tanh-sanitized loss (11.5% from the MLE on lung, see
// TestPSGLDFindsSanitizedMinimiser); with a tiny budget the perturbation
// methods are far off.
func TestEvaluateMRE(t *testing.T) {
	t.Parallel() // heavy: runs beside the other heavy tests
	data, base := goldenProblem(t, "lung")
	base.Lambda = 1e-3
	base.PSGLD = PSGLDOptions{Steps: 1000}
	src := dp.NewSeededSource(8)
	rep, err := EvaluateMRE(data, base, nil, []float64{0.1, 1e7}, 2, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 6 || len(rep.Reference) != 7 {
		t.Fatalf("report shape: %d cells, reference %d", len(rep.Cells), len(rep.Reference))
	}
	ridge := base
	ridge.Method, ridge.Ridge = MethodMLE, true
	rr, err := FitDiscrete(data, ridge, nil)
	if err != nil {
		t.Fatal(err)
	}
	bias := MRE(append(append([]float64(nil), rr.Alpha...), rr.Beta...), rep.Reference)
	for _, c := range rep.Cells {
		t.Logf("%-9s eps %-6g MRE mean %.4f sd %.4f median %.4f", c.Method, c.Epsilon, c.Mean, c.SD, c.Median)
		if c.Reps != 2 || math.IsNaN(c.Mean) {
			t.Errorf("cell %+v", c)
		}
		switch {
		case c.Epsilon == 1e7 && c.Method != MethodPSGLD && math.Abs(c.Mean-bias) > 0.01:
			t.Errorf("%s at eps 1e7: MRE %.4f, want the ridge bias %.4f", c.Method, c.Mean, bias)
		case c.Epsilon == 1e7 && c.Method == MethodPSGLD && c.Mean > 0.2:
			t.Errorf("psgld at eps 1e7: MRE %.4f, want about the sanitized bias 0.115", c.Mean)
		case c.Epsilon == 0.1 && c.Method != MethodPSGLD && c.Mean < 1:
			t.Errorf("%s at eps 0.1: MRE %.4f implausibly small", c.Method, c.Mean)
		}
	}
	if _, err := EvaluateMRE(data, base, []Method{MethodMLE}, []float64{1}, 1, src); err == nil {
		t.Error("mle as a private method: no error")
	}
	if _, err := EvaluateMRE(data, base, nil, []float64{1}, 0, src); err == nil {
		t.Error("zero reps: no error")
	}
}

// TestLambdaSweep reproduces the shape of the paper's Table 2 on lung:
// at a fixed budget, too small a ridge drowns f in noise (MRE >> 1) and a
// large ridge shrinks f to 0 (MRE near 1).
func TestLambdaSweep(t *testing.T) {
	data, base := goldenProblem(t, "lung")
	lambdas := []float64{1e-5, 1e-3, 1e-1, 1e1}
	rep, err := LambdaSweep(data, base, MethodOutput, lambdas, 6.4, 5, dp.NewSeededSource(9))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		t.Logf("Ext-Out-Pert eps 6.4 lambda %-6g MRE %.3f (sd %.3f)", c.Lambda, c.Mean, c.SD)
	}
	if first, last := rep.Cells[0].Mean, rep.Cells[len(lambdas)-1].Mean; first < 10 || last > 1.05 || last < 0.5 {
		t.Errorf("MRE at lambda 1e-5 = %.3f (want > 10), at lambda 10 = %.3f (want near 1)", first, last)
	}
	if _, err := LambdaSweep(data, base, MethodPSGLD, lambdas, 1, 1, dp.NewSeededSource(1)); err == nil {
		t.Error("psgld sweep: no error")
	}
}

// TestCoxVsDiscrete is the paper's Table 3: the discrete-time logit beta is
// close to Cox's on the same covariates (the paper reports 2.6%–9%).
func TestCoxVsDiscrete(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"lung", "kidney", "flchain"} {
		data, base := goldenProblem(t, name)
		c, err := CoxVsDiscrete(data, base)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-8s RE %.2f%%  discrete %.4f  cox %.4f", name, 100*c.RelativeError, c.BetaDiscrete, c.BetaCox)
		if c.RelativeError > 0.15 {
			t.Errorf("%s: relative error %.3f", name, c.RelativeError)
		}
	}
}

// TestPSGLDLinks: pSGLD accepts all three links and, at a large budget on
// a data set large enough for the tanh sanitizer to be mild (v = 2 ln n),
// samples near that link's MLE. One 1500-step chain per link: over seeds
// 18-27 the cloglog MRE ranged 0.05-0.11 (with the float Gaussian noise
// and with the lattice noise alike), hence the bound 0.15. The links are
// independent (each chain on its own seeded source, the data read only):
// parallel subtests, so the three single-goroutine chains run side by side
// instead of one after another at the end of the package's run.
func TestPSGLDLinks(t *testing.T) {
	t.Parallel()
	data := synthetic(dp.NewSeededSource(17), 3000, 3, 50, -3.5, []float64{1, -0.8, 0.5})
	for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
		t.Run(string(link), func(t *testing.T) {
			t.Parallel()
			opts := DiscreteOptions{Link: link, TimeMax: 1, Intervals: 50}
			ml := opts
			ml.Method = MethodMLE
			ref, err := FitDiscrete(data, ml, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts.Method, opts.Epsilon = MethodPSGLD, 1e6
			opts.PSGLD = PSGLDOptions{Steps: 1500}
			res, err := FitDiscrete(data, opts, dp.NewSeededSource(18))
			if err != nil {
				t.Fatal(err)
			}
			mre := MRE(append(append([]float64(nil), res.Alpha...), res.Beta...),
				append(append([]float64(nil), ref.Alpha...), ref.Beta...))
			t.Logf("pSGLD MRE to the MLE %.4f", mre)
			if mre > 0.15 {
				t.Errorf("pSGLD MRE to the MLE %.4f", mre)
			}
		})
	}
}
