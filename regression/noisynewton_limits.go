package regression

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// The limits of a MethodNewton release: post-processing of its released
// steps (IntervalNewton).

// scoreNoiseVar is the diagonal of the variance of a step's score noise
// (alpha block, then beta).
func scoreNoiseVar(st NewtonStep, e, p int) []float64 {
	dv := make([]float64, e+p)
	for j := range dv {
		if j < e {
			dv[j] = latticeLaplaceVar(st.ScoreAlpha.Noise)
		} else {
			dv[j] = latticeLaplaceVar(st.ScoreBeta.Noise)
		}
	}
	return dv
}

// sandwich returns a diag(dv) a^T.
func sandwich(a *mat.Dense, dv []float64) *mat.Dense {
	var ad, out mat.Dense
	ad.Mul(a, mat.NewDiagDense(len(dv), dv))
	out.Mul(&ad, a.T())
	return &out
}

// latticeLaplaceVar is the variance of one coordinate of n's noise.
func latticeLaplaceVar(n LatticeNoise) float64 {
	a := math.Exp(-n.Grid / n.Scale)
	return n.Grid * n.Grid * 2 * a / ((1 - a) * (1 - a))
}

// newtonIntervals sets the Wald limits of every coefficient, the standard
// errors, z tests and hazard (odds) ratios of a MethodNewton release from
// its released steps (post-processing): H is the pooled, floored Hessian
// at the estimate and D the variances of the last score's noise.
func newtonIntervals(res *DiscreteResult, conf float64) {
	e, p := len(res.Alpha), len(res.Beta)
	d := e + p
	f := append(append([]float64{}, res.Alpha...), res.Beta...)
	steps := res.NewtonSteps
	v, b, g0, ok := newtonNoiseCov(steps, f, e, p)
	if !ok {
		res.IntervalMethod = "none: no released Hessian near the estimate is usable"
		return
	}
	// the noise of every step's released score carried to the estimate
	// (V) and the sampling error the moves carry over, B G0 B'
	cov := mat.NewDense(d, d, nil)
	var t1, t2 mat.Dense
	t1.Mul(b, g0)
	t2.Mul(&t1, b.T())
	cov.Add(v, &t2)
	z := probitQuantile(1 - (1-conf)/2)
	se := make([]float64, d)
	lo := make([]float64, d)
	hi := make([]float64, d)
	for j := range d {
		se[j] = math.Sqrt(math.Max(cov.At(j, j), 0))
		lo[j], hi[j] = f[j]-z*se[j], f[j]+z*se[j]
	}
	res.AlphaLower, res.AlphaUpper = lo[:e], hi[:e]
	res.BetaLower, res.BetaUpper = lo[e:], hi[e:]
	res.AlphaSE, res.BetaSE = se[:e], se[e:]
	res.BetaZ = make([]float64, p)
	res.BetaP = make([]float64, p)
	res.HazardRatio = make([]float64, p)
	res.HazardRatioLower = make([]float64, p)
	res.HazardRatioUpper = make([]float64, p)
	for j := range p {
		b := res.Beta[j]
		res.BetaZ[j] = b / se[e+j]
		res.BetaP[j] = 2 * normCDF(-math.Abs(res.BetaZ[j]))
		res.HazardRatio[j] = math.Exp(b)
		res.HazardRatioLower[j], res.HazardRatioUpper[j] = math.Exp(lo[e+j]), math.Exp(hi[e+j])
	}
	res.IntervalMethod = IntervalNewton
}

// newtonNoiseCov returns the parts of the variance, to first order, of the
// estimate f of a MethodNewton release (post-processing of its released
// steps, replayed): step k moves f_k to f_k+1 = f_k - c_k H_k^-1 (G(f_k) +
// n_k), H_k its floored Hessian, c_k its trust-region factor, G the clipped
// score sum and n_k its noise (variance D_k). With G(f_k) = G0 (f_k - f*)
// near the clipped-score optimum f*, the error e_k = f_k - f* follows
// e_k+1 = L_k e_k - c_k H_k^-1 (n_k + dH_k s_k), L_k = I - c_k H_k^-1 G0,
// dH_k the change of H_k by its noise and s_k = H_k^-1 g_k the step (see
// hessNoiseStepVar): a direction the released Hessians do not determine
// (H_k floored above G0 there) keeps most of its error, and with it the
// noise of every earlier step, not only the last one's. So the noise's
// variance is v = V_K, V_k+1 = L_k V_k L_k' + c_k^2 H_k^-1 (D_k + C_k)
// H_k^-1, V_0 = 0. The moves carry f* - f_true (variance G0^-1, the
// clipping mild) into f as (I - L_K-1 ... L_0) (f* - f_true) = b G0 (f* -
// f_true), b = B_K, B_k+1 = L_k B_k + c_k H_k^-1, B_0 = 0: its variance is
// b G0 b', which needs G0, not its inverse (the directions the releases do
// not determine get a small gain b, not a large G0^-1). G0 is estimated
// from step k's pooled unfloored Hessian R_k: with H_k = R'R, S = R'^-1
// R_k R^-1 has the eigenvalue 1 in the directions the floor left alone
// (H_k = R_k there) and l / t < 1 in the floored ones (l the scaled
// eigenvalue, t the floor), where R_k is mostly noise; those are taken as
// not determined: L_k = I - c_k R^-1 P R, P the projection on the
// eigenvalue-1 directions of S (no contraction assumed where the floor
// acts: clipping l / t to [0, 1] instead kept the noise's positive half
// as contraction, and the weakly determined spline directions' limits
// came out 15% short, alpha coverage 0.89 at epsilon 2); g0 is the last
// step's R' P R. The start's own error in the directions the releases do
// not determine is not in the limits: f_0 is the released constant hazard
// with beta 0, and the baseline's shape away from it is not determined by
// the releases. ok is false when the replay does not reach f.
func newtonNoiseCov(steps []NewtonStep, f []float64, e, p int) (v, b, g0 *mat.Dense, ok bool) {
	d := e + p
	v = mat.NewDense(d, d, nil)
	b = mat.NewDense(d, d, nil)
	cur := steps[0].At
	for k := range steps {
		if dist(steps[k].At, cur) > 1e-9*(1+mat.Norm(mat.NewVecDense(d, cur), 2)) {
			return nil, nil, nil, false
		}
		mv, ok := newtonMoveOf(steps[:k+1], cur, e, p)
		if !ok {
			continue // f stayed: L = I, no noise moved it
		}
		var l *mat.Dense
		l, g0, ok = contraction(mv.h, mv.raw, mv.scale)
		if !ok {
			return nil, nil, nil, false
		}
		var t1, t2, t3 mat.Dense
		t1.Mul(l, v)
		t2.Mul(&t1, l.T())
		v.Copy(&t2)
		nv := sandwich(&mv.hInv, mv.noiseVar)
		nv.Scale(mv.scale*mv.scale, nv)
		v.Add(v, nv)
		// the Hessian's noise E moves the step by -H^-1 E s (s = H^-1 g)
		hc, ok := hessNoiseStepVar(mv.raw, mv.hessVar, e, mv.step)
		if !ok {
			return nil, nil, nil, false
		}
		var hv1, hv2 mat.Dense
		hv1.Mul(&mv.hInv, hc)
		hv2.Mul(&hv1, &mv.hInv)
		hv2.Scale(mv.scale*mv.scale, &hv2)
		v.Add(v, &hv2)
		t3.Mul(l, b)
		b.Copy(&t3)
		var ch mat.Dense
		ch.Scale(mv.scale, &mv.hInv)
		b.Add(b, &ch)
		cur = mv.next
	}
	if g0 == nil || dist(cur, f) > 1e-9*(1+mat.Norm(mat.NewVecDense(d, f), 2)) {
		return nil, nil, nil, false
	}
	return v, b, g0, true
}

// contraction is L = I - c R^-1 P R of newtonNoiseCov and the estimate
// R' P R of G0.
func contraction(h, raw *mat.SymDense, c float64) (*mat.Dense, *mat.Dense, bool) {
	d := h.SymmetricDim()
	var chol mat.Cholesky
	if !chol.Factorize(h) {
		return nil, nil, false
	}
	var r, rInv mat.TriDense
	chol.UTo(&r)
	if err := rInv.InverseTri(&r); err != nil {
		return nil, nil, false
	}
	var t, sd mat.Dense
	t.Mul(rInv.T(), raw)
	sd.Mul(&t, &rInv)
	s := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			s.SetSym(a, b, (sd.At(a, b)+sd.At(b, a))/2)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(s, true) {
		return nil, nil, false
	}
	vals := eig.Values(nil)
	for j, x := range vals {
		// 1: a direction the floor left alone (H_k = R_k there); below
		// 1: a floored one, whose R_k is mostly noise: taken as not
		// determined (no contraction, L = I there)
		if x >= 1-1e-9 {
			vals[j] = 1
		} else {
			vals[j] = 0
		}
	}
	var q mat.Dense
	eig.VectorsTo(&q)
	cs := sandwich(&q, vals)
	var m1, m2 mat.Dense
	m1.Mul(&rInv, cs)
	m2.Mul(&m1, &r)
	l := mat.NewDense(d, d, nil)
	for a := 0; a < d; a++ {
		for b := 0; b < d; b++ {
			id := 0.0
			if a == b {
				id = 1
			}
			l.Set(a, b, id-c*m2.At(a, b))
		}
	}
	var g1, g0 mat.Dense
	g1.Mul(r.T(), cs)
	g0.Mul(&g1, &r)
	return l, &g0, true
}

// hessNoiseStepVar is, to first order, the variance of dH s, s = H^-1 g
// the step, for dH the change the noise E of the pooled Hessian raw makes
// in the floored H = S F(S^-1 raw S^-1) S of floorNoise (c = 1). In the
// scaled metric E's entries have variance 1 (diagonal blocks) and rho^2
// (cross block), independent on the upper triangle; in the eigenbasis Q
// of the scaled raw the rotated entry (i, j) has the variance vt_ij =
// sum_a nu_aa Q_ai^2 Q_aj^2 + sum_a<b nu_ab (Q_ai Q_bj + Q_bi Q_aj)^2 (the
// rotated entries' covariances are neglected). F floors the eigenvalues
// l_i at t, so its derivative is dF = Q (G o Q'EQ) Q' with G_ij = (F(l_i)
// - F(l_j)) / (l_i - l_j): 1 where both are above the floor, 0 where both
// are floored (the noise there does not reach H), between for a mixed
// pair. With u = Q' S s, (G o Q'EQ) u has the variance C~_ii = sum_j
// G_ij^2 vt_ij u_j^2, C~_ik = G_ik^2 vt_ik u_i u_k, and dH s = S Q (G o
// Q'EQ) u.
func hessNoiseStepVar(raw *mat.SymDense, vars [nBlocks]float64, e int, s []float64) (*mat.Dense, bool) {
	d := raw.SymmetricDim()
	scaled, sc, r := noiseMetric(raw, vars, e)
	var eig mat.EigenSym
	if !eig.Factorize(scaled, true) {
		return nil, false
	}
	var q mat.Dense
	eig.VectorsTo(&q)
	l := eig.Values(nil)
	t := math.Sqrt(float64(d)) * r
	fl := func(x float64) float64 { return math.Max(x, t) }
	g := func(i, j int) float64 {
		if l[i] > t && l[j] > t {
			return 1
		}
		if l[i] <= t && l[j] <= t {
			return 0
		}
		return (fl(l[i]) - fl(l[j])) / (l[i] - l[j])
	}
	ss := make([]float64, d)
	for j := range ss {
		ss[j] = sc[j] * s[j]
	}
	var u mat.VecDense
	u.MulVec(q.T(), mat.NewVecDense(d, ss))
	// nu: the variance of the scaled noise's entry (a, b); vt: that of
	// the rotated noise's entry (i, j), the upper triangle's entries
	// independent
	sa, sb := math.Pow(vars[blkHessAA], 0.25), math.Pow(vars[blkHessBB], 0.25)
	rho2 := vars[blkHessAB] / (sa * sa * sb * sb)
	nu := func(a, b int) float64 {
		if (a < e) != (b < e) {
			return rho2
		}
		return 1
	}
	vt := func(i, j int) float64 {
		var v float64
		for a := 0; a < d; a++ {
			v += nu(a, a) * q.At(a, i) * q.At(a, i) * q.At(a, j) * q.At(a, j)
			for b := a + 1; b < d; b++ {
				w := q.At(a, i)*q.At(b, j) + q.At(b, i)*q.At(a, j)
				v += nu(a, b) * w * w
			}
		}
		return v
	}
	ct := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for k := 0; k < d; k++ {
			if i == k {
				var sum float64
				for j := 0; j < d; j++ {
					sum += g(i, j) * g(i, j) * vt(i, j) * u.AtVec(j) * u.AtVec(j)
				}
				ct.Set(i, i, sum)
			} else {
				ct.Set(i, k, g(i, k)*g(i, k)*vt(i, k)*u.AtVec(i)*u.AtVec(k))
			}
		}
	}
	var sq, t1, out mat.Dense
	sq.Mul(mat.NewDiagDense(d, sc), &q)
	t1.Mul(&sq, ct)
	out.Mul(&t1, sq.T())
	return &out, true
}
