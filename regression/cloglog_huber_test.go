package regression

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"gonum.org/v1/gonum/mat"
)

// TestCloglogHuberConstants: the bounded-influence cloglog loss has the
// derivatives it claims (central differences), is the cloglog loss up to
// the knee, is C^2 across it, and its psi' and psi” stay inside the
// constants the sensitivities use: psi' in [-1, 2], 0 <= psi” <= 1
// (grid of step 1e-3 on [-50, 60]; the supremum of the event term's psi”
// is 0.4125, of the survival term's 1 at the knee).
func TestCloglogHuberConstants(t *testing.T) {
	const lo, hi = -1.0, cloglogSlopeRange - 1
	var maxG, minG, maxH float64
	for i := 0; i <= 110000; i++ {
		z := -50 + float64(i)*1e-3
		for _, y := range []bool{false, true} {
			l, g, h := cloglogHuberPair(z, y)
			if math.IsNaN(l) || !(g >= lo && g <= hi) || !(h >= 0 && h <= CloglogCurvature) {
				t.Fatalf("z %v event %v: loss %v psi' %v psi'' %v outside (%v, %v) x [0, %v]", z, y, l, g, h, lo, hi, CloglogCurvature)
			}
			maxG, minG, maxH = max(maxG, g), min(minG, g), max(maxH, h)
			if z <= CloglogKnee || y {
				if l0, g0, h0 := cloglogPair(z, y); l0 != l || g0 != g || h0 != h {
					t.Fatalf("z %v event %v: not the cloglog loss below the knee", z, y)
				}
			}
			if i%97 == 0 && z > -20 && z < 20 {
				const d = 1e-5
				lp, gp, _ := cloglogHuberPair(z+d, y)
				lm, gm, _ := cloglogHuberPair(z-d, y)
				if !closeRel((lp-lm)/(2*d), g, 1e-6, 1e-8) || !closeRel((gp-gm)/(2*d), h, 1e-5, 1e-8) {
					t.Fatalf("z %v event %v: derivatives %v %v, differences %v %v", z, y, g, h, (lp-lm)/(2*d), (gp-gm)/(2*d))
				}
			}
		}
	}
	// C^2 at the knee
	const d = 1e-9
	la, ga, ha := cloglogHuberPair(CloglogKnee-d, false)
	lb, gb, hb := cloglogHuberPair(CloglogKnee+d, false)
	if math.Abs(la-lb) > 1e-8 || math.Abs(ga-gb) > 1e-8 || math.Abs(ha-hb) > 1e-8 {
		t.Fatalf("not C^2 at the knee: %v %v %v / %v %v %v", la, ga, ha, lb, gb, hb)
	}
	// the constants are nearly attained (not loose by construction)
	if maxG < 1.99 || minG > -0.99 || maxH < 0.999 {
		t.Fatalf("range psi' [%v, %v], max psi'' %v: constants loose?", minG, maxG, maxH)
	}
}

// candidateCovariates are the unit ball's extreme covariate rows in p
// dimensions: the diagonals (all sign patterns) and the axes.
func candidateCovariates(p int) [][]float64 {
	var xs [][]float64
	for mask := 0; mask < 1<<p; mask++ {
		x := make([]float64, p)
		for j := range x {
			x[j] = 1 / math.Sqrt(float64(p))
			if mask>>j&1 == 1 {
				x[j] = -x[j]
			}
		}
		xs = append(xs, x)
	}
	for j := 0; j < p; j++ {
		for _, v := range []float64{1, -1} {
			x := make([]float64, p)
			x[j] = v
			xs = append(xs, x)
		}
	}
	return xs
}

// privateCloglogModel prepares data for a private cloglog fit (method m)
// and switches the model to the loss the fit minimises, as fitDiscrete does.
func privateCloglogModel(t *testing.T, data Data, q, e int) *prepared {
	t.Helper()
	o := DiscreteOptions{Method: MethodOutput, Link: LinkCloglog, TimeMax: 1, Intervals: q, Knots: e}
	pr, err := prepareDiscrete(data, &o)
	if err != nil {
		t.Fatal(err)
	}
	pr.m.link = privateLink(LinkCloglog)
	return pr
}

// TestCloglogGradientBound: ||grad l(f; d) - grad l(f; d')|| <=
// GradientBoundFor(cloglog) for records d, d' at every interval, event or
// censored, covariates at the unit ball's extremes, at points f that drive
// the periods' z far beyond the knee and far below zero (where psi' tends
// to its bounds 2 and -1); the bound is approached (at least 40% used).
func TestCloglogGradientBound(t *testing.T) {
	const q, e, p = 6, 3, 2
	xs := candidateCovariates(p)
	type rec struct {
		s  int
		ev bool
		x  []float64
	}
	var recs []rec
	for s := 1; s <= q; s++ {
		for _, ev := range []bool{false, true} {
			for _, x := range xs {
				recs = append(recs, rec{s, ev, x})
			}
		}
	}
	data := Data{}
	for _, r := range recs {
		data.Time = append(data.Time, (float64(r.s)-0.5)/q)
		data.Event = append(data.Event, r.ev)
		data.X = append(data.X, r.x)
	}
	pr := privateCloglogModel(t, data, q, e)
	m := pr.m
	bound, err := GradientBoundFor(pr.basis, LinkCloglog)
	if err != nil {
		t.Fatal(err)
	}
	points := [][]float64{{0, 0, 0, 0, 0}, {-3, 1, 0, 1, -1}, {0, 0, 0, 40, 0}, {0, 0, 0, 0, -40}, {5, 0, 0, 30, 30}, {-20, 3, 2, 0, 0}}
	worst := 0.0
	grads := make([][]float64, m.n)
	for _, f := range points {
		st := m.newState()
		m.prepare(st, f[:e])
		for i := range grads {
			grads[i] = make([]float64, m.dim())
			m.recordLossGrad(i, f[e:], st, grads[i])
		}
		for i := range grads {
			for j := range grads {
				var d2 float64
				for k := range grads[i] {
					d := grads[i][k] - grads[j][k]
					d2 += d * d
				}
				worst = max(worst, math.Sqrt(d2))
			}
		}
	}
	if worst > bound {
		t.Fatalf("gradient difference %v > bound %v", worst, bound)
	}
	if worst < 0.4*bound {
		t.Fatalf("gradient difference %v uses less than 40%% of the bound %v: vacuous?", worst, bound)
	}
	t.Logf("worst gradient difference %.4f of the bound %.4f", worst, bound)
}

// cloglogNeighbourData is a small data set of n-1 fixed records plus a
// last record (s, event, x) that the neighbouring data sets replace.
func cloglogNeighbourData(rng *rand.Rand, n, q, s int, ev bool, x []float64) Data {
	d := Data{}
	for range n - 1 {
		d.Time = append(d.Time, (float64(1+rng.IntN(q))-0.5)/float64(q))
		d.Event = append(d.Event, rng.IntN(3) == 0)
		d.X = append(d.X, []float64{rng.Float64() - 0.5, rng.Float64() - 0.5})
	}
	d.Time = append(d.Time, (float64(s)-0.5)/float64(q))
	d.Event = append(d.Event, ev)
	d.X = append(d.X, x)
	return d
}

// TestCloglogExtOutPertWorstCaseRatio: Ext-Out-Pert with the cloglog link
// publishes round_g(f*(D)) + g Z, f* the certified minimiser of the mean
// bounded-influence cloglog loss plus the ridge. For neighbouring D, D'
// (the last record replaced by every extreme record: every interval, event
// or censored, covariates at the unit ball's extremes) the computed
// minimisers move by at most the sensitivity OutputSensitivityFor (plus
// the certificate slack), and the log-ratio of the exact pmfs of the
// published vector, ||r - r'||_1 / s_eff (r, r' the rounded grid indices,
// s_eff dp.DiscreteLaplace's scale in grid units), is at most epsilon. The
// sensitivity is at least 5% used (so the test can fail; the bound is a
// supremum over every f, the minimisers sit where psi' is moderate).
func TestCloglogExtOutPertWorstCaseRatio(t *testing.T) {
	const n, q, e, p = 12, 5, 3, 2
	for _, c := range []struct{ lambda, eps float64 }{{10, 1}, {1, 0.5}} {
		var fits [][]float64
		var sens float64
		for s := 1; s <= q; s++ {
			for _, ev := range []bool{false, true} {
				for _, x := range candidateCovariates(p) {
					rng := rand.New(rand.NewPCG(4, 4)) // the same n-1 records every time
					pr := privateCloglogModel(t, cloglogNeighbourData(rng, n, q, s, ev, x), q, e)
					var err error
					if sens, err = OutputSensitivityFor(pr.basis, n, c.lambda, LinkCloglog); err != nil {
						t.Fatal(err)
					}
					o := objective{m: pr.m, scale: 1.0 / n, reg: c.lambda}
					r, err := minimise(o, startValue(pr.m), newtonOptions{})
					if err != nil || !certified(o, r.f) {
						t.Fatalf("s %d event %v x %v: not certified (%v)", s, ev, x, err)
					}
					fits = append(fits, r.f)
				}
			}
		}
		noise, err := OutputNoise(sens+2*CertificateTolerance/c.lambda, e+p, c.eps)
		if err != nil {
			t.Fatal(err)
		}
		g := noise.Grid
		sUnits := math.Ceil(noise.Scale/g*(1<<30)) / (1 << 30)
		var worstL2, worstRatio float64
		for _, a := range fits {
			for _, b := range fits {
				var d2 float64
				for k := range a {
					d2 += (a[k] - b[k]) * (a[k] - b[k])
				}
				worstL2 = max(worstL2, math.Sqrt(d2))
				for _, off := range []float64{0, 0.5 - 1e-9, 0.25} {
					var l1 float64
					for k := range a {
						l1 += math.Abs(math.Round(a[k]/g+off) - math.Round(b[k]/g+off))
					}
					worstRatio = max(worstRatio, l1/sUnits)
				}
			}
		}
		if worstL2 > sens+2*CertificateTolerance/c.lambda {
			t.Errorf("lambda %v: minimisers move %v > sensitivity %v", c.lambda, worstL2, sens)
		}
		if worstL2 < 0.05*sens {
			t.Errorf("lambda %v: minimisers move %v, under 5%% of the sensitivity %v: vacuous?", c.lambda, worstL2, sens)
		}
		if worstRatio > c.eps*(1+1e-12) {
			t.Errorf("lambda %v: worst log-ratio of the published vector %v > epsilon %v", c.lambda, worstRatio, c.eps)
		}
		t.Logf("lambda %v eps %v: minimiser moves %.4g of sensitivity %.4g; worst log-ratio %.4f", c.lambda, c.eps, worstL2, sens, worstRatio)
	}
}

// TestCloglogObjPertJacobianRatio: Ext-Obj-Pert's density ratio has two
// factors: the noise b's at b(D) and b(D'), which differ by a record's
// gradient difference (TestCloglogGradientBound), and the Jacobian
// determinants det(n reg I + H_D(f)) / det(n reg I + H_D'(f)). With the
// cloglog link the log of the latter is at most JacobianLoss's
// curvature-1 form / 2 = sum_s ln(1 + (||A_s||^2 + 1)/(n reg)) at every f,
// for the worst records (every interval, event or not, unit-ball
// extremes) at points where psi” reaches its bound 1 (z at the knee); at
// least a quarter of the bound is used.
func TestCloglogObjPertJacobianRatio(t *testing.T) {
	const n, q, e, p = 12, 5, 3, 2
	const reg = 0.2
	points := [][]float64{{0, 0, 0, 0, 0}, {-1, 0.5, 0, 1, 0}, {0, 0, 0, 3, -3}}
	var dets [][]float64 // per point, per neighbour
	var basis [][]float64
	for range points {
		dets = append(dets, nil)
	}
	for s := 1; s <= q; s++ {
		for _, ev := range []bool{false, true} {
			for _, x := range candidateCovariates(p) {
				rng := rand.New(rand.NewPCG(5, 5))
				pr := privateCloglogModel(t, cloglogNeighbourData(rng, n, q, s, ev, x), q, e)
				basis = pr.basis
				d := pr.m.dim()
				for k, f := range points {
					h := make([]float64, d*d)
					pr.m.eval(f, nil, h)
					for j := 0; j < d; j++ {
						h[j*d+j] += n * reg
					}
					var lu mat.LU
					lu.Factorize(mat.NewDense(d, d, h))
					ld, sign := lu.LogDet()
					if sign <= 0 {
						t.Fatalf("Jacobian not positive definite")
					}
					dets[k] = append(dets[k], ld)
				}
			}
		}
	}
	bound := jacobianLoss(basis, n, reg, CloglogCurvature) / 2
	worst := 0.0
	for _, ds := range dets {
		for _, a := range ds {
			for _, b := range ds {
				worst = max(worst, a-b)
			}
		}
	}
	if worst > bound {
		t.Fatalf("log Jacobian ratio %v > bound %v", worst, bound)
	}
	if worst < bound/4 {
		t.Fatalf("log Jacobian ratio %v uses less than a quarter of the bound %v: vacuous?", worst, bound)
	}
	t.Logf("worst log Jacobian ratio %.4f of the bound %.4f", worst, bound)
}

// TestCloglogHessianWorstCaseRatio is TestHessianWorstCaseRatio for the
// interval release of a private cloglog fit: the published round_g(M) +
// g Z (M the upper triangle of the mean bounded-influence cloglog Hessian
// at a fixed point) has worst-case log-ratio at most epsilon, with the
// sensitivity HessianL1SensitivityFor(cloglog); pairs where the bound is
// approached: the point f = 0 (every survived period at the knee, psi” =
// 1, its maximum), one record surviving every interval, the other ending
// at every interval, covariates at the unit ball's extremes. At least half
// of epsilon is used.
func TestCloglogHessianWorstCaseRatio(t *testing.T) {
	for _, c := range []struct {
		q, e, p int
		eps     float64
	}{{5, 3, 2, 0.5}, {12, 3, 2, 0.1}, {6, 2, 3, 1}} {
		d := c.e + c.p
		g, sUnits := hessianNoiseUnits(t, c.q, c.e, c.p, c.eps, func(basis [][]float64, p, n int) (float64, error) {
			return HessianL1SensitivityFor(basis, p, n, LinkCloglog)
		})
		xs := candidateCovariates(c.p)
		hess := func(x []float64, s int, ev bool) []float64 {
			data := Data{Time: []float64{0.5, 0.7, (float64(s) - 0.5) / float64(c.q)}, Event: []bool{true, false, ev},
				X: [][]float64{make([]float64, c.p), make([]float64, c.p), x}}
			return hessianAtZero(t, privateCloglogModel(t, data, c.q, c.e), d)
		}
		worst := 0.0
		for _, a := range xs {
			ha := hess(a, c.q, false)
			for _, b := range xs {
				for sb := 1; sb <= c.q; sb++ {
					for _, ev := range []bool{false, true} {
						worst = max(worst, latticeLogRatio(ha, hess(b, sb, ev), g, sUnits))
					}
				}
			}
		}
		checkRatioUsed(t, fmt.Sprintf("q %d e %d p %d", c.q, c.e, c.p), worst, c.eps)
	}
}

// TestCloglogPrivateReleases: output, objective and psgld accept the
// cloglog link with the interval release; the release says cloglog, its
// noise is calibrated with the cloglog constants (Ext-Out-Pert: scale
// (sqrt(d) t' + d g)/epsilon_fit with t' from GradientBoundFor(cloglog);
// Ext-Obj-Pert: its epsilon' and delta from ObjPertBudgetFor(cloglog)),
// the Hessians' noise from HessianL1SensitivityFor(cloglog), and the
// coefficient intervals are published (beta) for the perturbation methods;
// probit is still refused.
func TestCloglogPrivateReleases(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 3000
	data := Data{}
	for range n {
		x := []float64{rng.Float64() - 0.5, rng.Float64() - 0.5}
		// grouped-time PH world: per-interval hazard 1 - exp(-exp(-3 + x'beta))
		h := -math.Expm1(-math.Exp(-3 + x[0] - x[1]))
		s := 1
		for s < 20 && rng.Float64() >= h {
			s++
		}
		ev := s < 20 || rng.Float64() < h
		data.Time = append(data.Time, (float64(s)-0.5)/20)
		data.Event = append(data.Event, ev)
		data.X = append(data.X, x)
	}
	basis, err := SplineBasis(20, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Method{MethodOutput, MethodObjective, MethodPSGLD} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel() // the methods are independent (each its own seeded source)
			o := DiscreteOptions{Method: m, Link: LinkCloglog, Epsilon: 2, TimeMax: 1, Intervals: 20, Knots: 3,
				IntervalFraction: DefaultIntervalFraction, PSGLD: PSGLDOptions{Steps: 2000}}
			res, err := FitDiscrete(data, o, dp.NewSeededSource(7))
			if err != nil {
				t.Fatal(err)
			}
			if res.Link != LinkCloglog || res.Fallback || len(res.Hessians) != len(hessianShares) {
				t.Fatalf("%s: link %s fallback %v hessians %d", m, res.Link, res.Fallback, len(res.Hessians))
			}
			l1, _ := HessianL1SensitivityFor(basis, 2, n, LinkCloglog)
			hn, _ := HessianNoise(l1, hessianEntries(5), res.Hessians[0].Epsilon)
			if res.Hessians[0].Noise != hn {
				t.Errorf("%s: hessian noise %+v, want %+v", m, res.Hessians[0].Noise, hn)
			}
			switch m {
			case MethodOutput:
				sens, _ := OutputSensitivityFor(basis, n, DefaultLambda, LinkCloglog)
				want, _ := OutputNoise(sens+2*CertificateTolerance/DefaultLambda, 5, res.EpsilonFit)
				if *res.Noise != want {
					t.Errorf("output: noise %+v, want %+v", *res.Noise, want)
				}
			case MethodObjective:
				ep, delta, _ := ObjPertBudgetFor(basis, n, DefaultLambda, res.EpsilonFit, LinkCloglog)
				lep, _, _ := ObjPertBudget(basis, n, DefaultLambda, res.EpsilonFit)
				if res.EpsilonPrime != ep || res.Delta != delta || !(ep < lep) {
					t.Errorf("objective: epsilon' %v delta %v, want %v %v (logit's epsilon' %v)", res.EpsilonPrime, res.Delta, ep, delta, lep)
				}
			}
			if m == MethodObjective && (res.BetaLower != nil || res.IntervalMethod != IntervalObjectiveCloglogWithheld) {
				t.Errorf("objective cloglog: limits %v published (%s), want withheld", res.BetaLower, res.IntervalMethod)
			}
			// withheld limits: flagged, the reason saying it was not assessed
			// (before: low_information false, meaning "not assessed")
			if m == MethodObjective && (!res.LowInformation || !strings.HasPrefix(res.LowInformationReason, "not assessed: no coefficient limits released")) {
				t.Errorf("objective cloglog: low_information %v (%q), want flagged as not assessed", res.LowInformation, res.LowInformationReason)
			}
			if m == MethodOutput && (res.BetaLower == nil || res.BetaUpper == nil) {
				t.Errorf("%s: no beta limits (%s)", m, res.IntervalMethod)
			}
		})
	}
	_, err = FitDiscrete(data, DiscreteOptions{Method: MethodObjective, Link: LinkProbit, Epsilon: 2, TimeMax: 1, Intervals: 20}, dp.NewSeededSource(1))
	if err == nil || !strings.Contains(err.Error(), "logit and cloglog") {
		t.Fatalf("probit objective: %v", err)
	}
}
