package regression

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// The interval release (issue 12): noisy mean Hessians of the loss at
// points computed from the released coefficients.
//
// A private discrete release with IntervalFraction phi > 0 spends
// (1 - phi) epsilon on the coefficients (the method's mechanism, unchanged)
// and phi epsilon on three releases of
//
//	M(a; D) = (1/n) sum_i grad^2 l(a; d_i),
//
// the mean Hessian of the logit loss at a point a that is a function of
// values already released (sequential composition: a is public when M(a)
// is drawn, so M's sensitivity is taken at a fixed point). Each M is
// released as its upper triangle, row by row (d(d+1)/2 values, d = knots +
// covariates), rounded to a public grid plus per-entry discrete Laplace
// noise (dp.GridLaplaceVector), exactly like Ext-Out-Pert's coefficients.
// Budgets phi epsilon/8, phi epsilon/8, 3 phi epsilon/4 (hessianShares;
// powers of two and their sum, so the parts sum to phi epsilon exactly).
//
// The points: a_1 = f~ (the released coefficients); a_{k+1} = (f~ +
// (I + r H_k^-1) f~)/2 with H_k the projected k-th release and r the
// method's ridge (inference.go): the midpoint between the release and its
// de-biased value. The ridge moves the estimate far (a coefficient of 1 to
// about 0.5 at lambda = 0.1 in the test world), so one Newton step with the
// Hessian at f~ stops short (0.89); the de-biasing needs the Hessian
// averaged along the path from f~ to the MLE, which the midpoint rule
// gives once the midpoint is located (0.999 after the third release, MLE
// 0.9987, n = 100000). The intervals use the last release only.
//
// Sensitivity (replace-one, n public). A record's Hessian is
// sum_{s <= s_i} w_s v_s v_s' with v_s = (A_s, x), w_s = psi''(z_s) =
// h(1 - h) in [0, 1/4] for the logit link (the same for an event and a
// survival term), and w_s = 0 beyond s_i. Replacing record (x, w) by
// (y, w') changes n M by sum_s of: in the alpha-alpha block (w_s - w'_s)
// A_s A_s', |w_s - w'_s| <= 1/4, upper-triangle L1 <= (||A_s||_1^2 +
// ||A_s||^2)/8; in the alpha-beta block A_s (w_s x - w'_s y)', L1 <=
// ||A_s||_1 (||x||_1 + ||y||_1)/4 <= ||A_s||_1 sqrt(p)/2; on the beta
// diagonal sum_j |w x_j^2 - w' y_j^2| <= min(2, p)/4; off it sum_{j<k}
// (|x_j x_k| + |y_j y_k|)/4 <= (p - 1)/4 (x, y in the unit ball).
// HessianL1Sensitivity is the sum over s = 1..q divided by n (records
// surviving every interval are the worst case; TestHessianWorstCaseRatio
// checks the published value against it). The rounding to the grid g adds
// entries * g, as in OutputNoise.
//
// Why at the released f~ and not at the ridge minimiser: M at the
// minimiser also moves with the minimiser when a record is replaced, by up
// to max|psi'''| (1/(6 sqrt 3)) times the minimiser's sensitivity
// GradientBound/(n lambda) times a sum over every interval of every
// record: about 100 (q = 20) to 1000 (q = 200) times the noise needed at a
// fixed f. The intervals (inference.go) treat M(f~) as the information at
// the truth; TestCoefficientIntervalCoverage measures what that costs.

// hessianEntries is the number of released values of a d x d symmetric
// matrix (its upper triangle).
func hessianEntries(d int) int { return d * (d + 1) / 2 }

// HessianL1Sensitivity is the replace-one L1 sensitivity of the upper
// triangle of the mean logit-loss Hessian at a fixed f (the cloglog
// link's bounded-influence loss: HessianL1SensitivityFor), for the spline
// basis rows and p covariates in the unit ball, at n records (see above).
func HessianL1Sensitivity(basis [][]float64, p, n int) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("hessian sensitivity: n must be >= 1, got %d", n)
	}
	if p < 0 {
		return 0, fmt.Errorf("hessian sensitivity: covariates must be >= 0, got %d", p)
	}
	var sum float64
	rp := sqrtUp(float64(p))
	beta := (math.Min(2, float64(p)) + math.Max(float64(p)-1, 0)) / 4
	for _, row := range basis {
		var l1 float64
		for _, v := range row {
			l1 += math.Abs(v)
		}
		sum += (l1*l1+sqNorm(row))/8 + l1*rp/2 + beta
	}
	return sum / float64(n) * roundoffMargin, nil
}

// HessianNoise is the lattice noise of the interval release: L1
// sensitivity l1 over entries values at budget epsilon, each rounded to the
// grid g (the power of two near 2^-20 of l1/epsilon), so the scale is
// (l1 + entries g)/epsilon.
func HessianNoise(l1 float64, entries int, epsilon float64) (LatticeNoise, error) {
	if entries < 1 {
		return LatticeNoise{}, fmt.Errorf("hessian noise: entries must be >= 1, got %d", entries)
	}
	if !(l1 > 0) || math.IsInf(l1, 0) || !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return LatticeNoise{}, fmt.Errorf("hessian noise: sensitivity %v and epsilon %v must be positive and finite", l1, epsilon)
	}
	g := dp.LaplaceGrid(l1 / epsilon)
	l1 += float64(entries) * g
	return LatticeNoise{Grid: g, Scale: l1 / epsilon, L1: l1}, nil
}

// meanHessianUpper returns the upper triangle (row by row) of the mean
// loss Hessian (1/n) sum_i grad^2 l(f; d_i).
func (m *discreteModel) meanHessianUpper(f []float64) ([]float64, error) {
	d := m.dim()
	h := make([]float64, d*d)
	v := m.eval(f, nil, h)
	if math.IsNaN(v) {
		return nil, errors.New("hessian: loss is not a number at the released coefficients")
	}
	out := make([]float64, 0, hessianEntries(d))
	inv := 1 / float64(m.n)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			x := h[a*d+b] * inv
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, errors.New("hessian: entry not finite")
			}
			out = append(out, x)
		}
	}
	return out, nil
}

// HessianRelease is one noisy mean Hessian of the interval release.
type HessianRelease struct {
	// At is the point (alpha then beta), a function of released values.
	At []float64 `json:"at"`
	// Upper is the noisy upper triangle, row by row.
	Upper []float64 `json:"upper"`
	// Epsilon is this release's budget and Noise its lattice noise.
	Epsilon float64      `json:"epsilon"`
	Noise   LatticeNoise `json:"noise"`
}

// hessianShares are the parts of the interval budget of the three
// releases (powers of two: they sum to 1 exactly).
var hessianShares = []float64{0.125, 0.125, 0.75}

// releaseHessians draws the interval release for the released
// coefficients f of res at budget eps (see above).
func releaseHessians(m *discreteModel, basis [][]float64, res DiscreteResult, f []float64, eps float64, src dp.Source) ([]HessianRelease, error) {
	l1, err := HessianL1SensitivityFor(basis, m.p, m.n, m.link)
	if err != nil {
		return nil, err
	}
	r, err := debiasRidge(res)
	if err != nil {
		return nil, err
	}
	d := m.dim()
	at := append([]float64(nil), f...)
	var out []HessianRelease
	for k, share := range hessianShares {
		if k > 0 {
			// the next point: midpoint of f and its de-biased value under
			// the previous release (post-processing of released values)
			prev := out[k-1]
			h, ok := projectPD(upperToSym(prev.Upper, d), hessianFloor*math.Sqrt2*prev.Noise.Scale)
			if !ok {
				return nil, errors.New("eigen-decomposition failed")
			}
			db := debias(h, r, f)
			if db == nil {
				return nil, errors.New("de-biasing failed")
			}
			at = make([]float64, d)
			for j := range at {
				at[j] = (f[j] + db[j]) / 2
			}
		}
		e := eps * share
		noise, err := HessianNoise(l1, hessianEntries(d), e)
		if err != nil {
			return nil, err
		}
		h, err := m.meanHessianUpper(at)
		if err != nil {
			return nil, err
		}
		u, err := noise.Release(src, h)
		if err != nil {
			return nil, err
		}
		out = append(out, HessianRelease{At: at, Upper: u, Epsilon: e, Noise: noise})
	}
	return out, nil
}

// MeanInformation returns the mean loss Hessian (1/n) sum_i grad^2 l(f;
// d_i) of the discrete-time model at f (alpha then beta; d x d, row-major)
// on data preprocessed as opts says. Non-private: for evaluation (the
// Wald intervals of the MLE beside the private ones in the coverage
// studies), never on a release path.
func MeanInformation(data Data, opts DiscreteOptions, f []float64) ([]float64, error) {
	o := opts
	o.Method = MethodMLE
	pr, err := prepareDiscrete(data, &o)
	if err != nil {
		return nil, fmt.Errorf("mean information: %w", err)
	}
	d := pr.m.dim()
	if len(f) != d {
		return nil, fmt.Errorf("mean information: %d coefficients for dimension %d", len(f), d)
	}
	h := make([]float64, d*d)
	pr.m.eval(f, nil, h)
	for j := range h {
		h[j] /= float64(pr.m.n)
	}
	return h, nil
}
