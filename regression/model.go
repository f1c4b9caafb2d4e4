package regression

import (
	"math"
	"runtime"
	"sync"
)

// discreteModel is the discrete-time survival likelihood in its compact
// form: one row per record (interval s_i, event flag, covariates), never one
// row per person-period. For a parameter f = (alpha, beta) the per-interval
// baseline a_s = alpha'A_s is computed once (q values); each record then
// walks its own intervals 1..s_i with the precomputed a_s (logit, probit), or
// reads prefix sums over s (cloglog, whose survival terms factorise as
// exp(a_s) exp(beta'x)). Interval-indexed quantities (the alpha part of the
// gradient and Hessian) are accumulated per interval and contracted with A_s
// once at the end.
type discreteModel struct {
	n, p, e, q int
	basis      []float64 // q*e, row s-1 is A_s
	s          []int32   // per record, 1..q
	event      []bool
	x          []float64 // n*p, preprocessed covariates
	link       Link
	workers    int
	// groups, when set, holds the records grouped by covariate pattern
	// (groupPatterns): eval then visits (pattern, interval) cells instead
	// of records.
	groups *patternGroups
}

func (m *discreteModel) dim() int { return m.e + m.p }

// basisRow returns A_s for s in 1..q.
func (m *discreteModel) basisRow(s int) []float64 { return m.basis[(s-1)*m.e : s*m.e] }

// intervalState holds the per-interval quantities for one alpha.
type intervalState struct {
	a    []float64 // a_s = alpha'A_s, index s-1
	ea   []float64 // exp(a_s)
	maxA float64   // max |a_s|
	p0   []float64 // cloglog: p0[k] = sum_{s<=k} exp(a_s), k = 0..q (p0[0] = 0)
	p1   []float64 // cloglog: p1[k*e+j] = sum_{s<=k} exp(a_s) A_sj
}

func (m *discreteModel) newState() *intervalState {
	st := &intervalState{a: make([]float64, m.q), ea: make([]float64, m.q)}
	if m.link == LinkCloglog {
		st.p0 = make([]float64, m.q+1)
		st.p1 = make([]float64, (m.q+1)*m.e)
	}
	return st
}

func (m *discreteModel) prepare(st *intervalState, alpha []float64) {
	st.maxA = 0
	for s := 0; s < m.q; s++ {
		row := m.basis[s*m.e : (s+1)*m.e]
		var v float64
		for j, b := range row {
			v += alpha[j] * b
		}
		st.a[s] = v
		st.ea[s] = math.Exp(v)
		st.maxA = math.Max(st.maxA, math.Abs(v))
	}
	if m.link == LinkCloglog {
		for k := 1; k <= m.q; k++ {
			st.p0[k] = st.p0[k-1] + st.ea[k-1]
			row := m.basis[(k-1)*m.e : k*m.e]
			for j := 0; j < m.e; j++ {
				st.p1[k*m.e+j] = st.p1[(k-1)*m.e+j] + st.ea[k-1]*row[j]
			}
		}
	}
}

// accum is one worker's share of the loss, gradient and Hessian.
type accum struct {
	loss float64
	gs   []float64 // per interval: sum of dloss/dz
	hs   []float64 // per interval: sum of d2loss/dz2
	gb   []float64 // p
	hab  []float64 // e*p
	hbb  []float64 // p*p
	v    []float64 // e, scratch
	ws   []float64 // cloglog: per k, sum of w_i over records with k_i = k
}

func (m *discreteModel) newAccum(wantHess bool) *accum {
	ac := &accum{gs: make([]float64, m.q), hs: make([]float64, m.q), gb: make([]float64, m.p), v: make([]float64, m.e)}
	if wantHess {
		ac.hab = make([]float64, m.e*m.p)
		ac.hbb = make([]float64, m.p*m.p)
	}
	if m.link == LinkCloglog {
		ac.ws = make([]float64, m.q+1)
	}
	return ac
}

// addHessX adds the Hessian's covariate blocks of one record (or pattern)
// with covariates x: v (sum_s h_s A_s) times x' to hab and hsum x x' to
// hbb's lower triangle.
func (ac *accum) addHessX(v, x []float64, hsum float64) {
	p := len(x)
	for a, va := range v {
		hr := ac.hab[a*p : (a+1)*p]
		for j, xv := range x {
			hr[j] += va * xv
		}
	}
	for a, xa := range x {
		c := hsum * xa
		hr := ac.hbb[a*p : (a+1)*p]
		for b := 0; b <= a; b++ {
			hr[b] += c * x[b]
		}
	}
}

// fastLimit bounds |a_s| + |beta'x| for the product form of the logit loss.
const fastLimit = 30

// record accumulates record i's loss and derivatives into ac.
func (m *discreteModel) record(i int, beta []float64, st *intervalState, ac *accum, wantGrad, wantHess bool) {
	e, p := m.e, m.p
	xi := m.x[i*p : (i+1)*p]
	u := dotBeta(beta, xi)
	si := int(m.s[i])
	k := si - 1 // survived intervals 1..k, event interval si
	var gsum, hsum float64
	v := ac.v
	for j := range v {
		v[j] = 0
	}
	switch {
	case m.link == LinkCloglog:
		w := math.Exp(u)
		sv := w * st.p0[k]
		ac.loss += sv
		gsum, hsum = sv, sv
		if wantGrad {
			ac.ws[k] += w
		}
		if wantHess {
			pr := st.p1[k*e : (k+1)*e]
			for j := range v {
				v[j] = w * pr[j]
			}
		}
	case m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit && wantHess && e == 3:
		ac.loss, gsum, hsum, v[0], v[1], v[2] = logitSurvived3(ac.loss, st.ea[:k], math.Exp(u), m.basis[:3*k], ac.gs[:k], ac.hs[:k])
	case m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit:
		w := math.Exp(u)
		prod, loss := 1.0, ac.loss
		ea := st.ea[:k]
		gs := ac.gs[:k]
		hs := ac.hs[:k]
		for s, es := range ea {
			t := es * w
			r := 1 / (1 + t)
			pk := t * r
			prod, loss = lossProd(prod, 1+t, loss)
			if wantGrad {
				hk := pk * r
				gs[s] += pk
				gsum += pk
				if wantHess {
					hs[s] += hk
					hsum += hk
					row := m.basis[s*e : (s+1)*e]
					for j, b := range row {
						v[j] += hk * b
					}
				}
			}
		}
		ac.loss = loss + math.Log(prod)
	default:
		for s := 0; s < k; s++ {
			l, g, h := m.link.pair(st.a[s]+u, false)
			ac.loss += l
			if wantGrad {
				ac.gs[s] += g
				gsum += g
				if wantHess {
					ac.hs[s] += h
					hsum += h
					row := m.basis[s*e : (s+1)*e]
					for j, b := range row {
						v[j] += h * b
					}
				}
			}
		}
	}
	// the record's last interval: event or survival (censored)
	l, g, h := m.link.pair(st.a[k]+u, m.event[i])
	ac.loss += l
	if !wantGrad {
		return
	}
	ac.gs[k] += g
	gsum += g
	for j, xv := range xi {
		ac.gb[j] += gsum * xv
	}
	if !wantHess {
		return
	}
	ac.hs[k] += h
	hsum += h
	row := m.basis[k*e : (k+1)*e]
	for j, b := range row {
		v[j] += h * b
	}
	ac.addHessX(v, xi, hsum)
}

// lossProd multiplies the logit loss's running product of the 1 + t by
// f, its logarithm moved into loss when it passes 1e250 (record's product
// form: one logarithm per record, not one per interval).
func lossProd(prod, f, loss float64) (float64, float64) {
	prod *= f
	if prod > 1e250 {
		return 1, loss + math.Log(prod)
	}
	return prod, loss
}

// logitSurvived3 is record's logit product form over a record's survived
// intervals (exp(a_s) in ea, w = exp(beta'x), basis the rows A_s) for the
// default e = 3 with the Hessian: it adds the terms to gs and hs and the
// loss to loss, and returns the loss and the sums of g, h and h A_s, held
// in registers; the same operations in the same order as record's general
// loop (the same bits).
func logitSurvived3(loss float64, ea []float64, w float64, basis, gs, hs []float64) (_, gsum, hsum, v0, v1, v2 float64) {
	prod := 1.0
	gs, hs = gs[:len(ea)], hs[:len(ea)]
	for s, es := range ea {
		t := es * w
		r := 1 / (1 + t)
		pk := t * r
		prod, loss = lossProd(prod, 1+t, loss)
		hk := pk * r
		gs[s] += pk
		gsum += pk
		hs[s] += hk
		hsum += hk
		row := basis[3*s : 3*s+3 : 3*s+3]
		v0 += hk * row[0]
		v1 += hk * row[1]
		v2 += hk * row[2]
	}
	return loss + math.Log(prod), gsum, hsum, v0, v1, v2
}

// eval returns the total loss sum_i l(f; d_i) at f and, when grad (len dim)
// or hess (len dim*dim, row-major) is non-nil, fills them.
func (m *discreteModel) eval(f, grad, hess []float64) float64 {
	e, p, dim := m.e, m.p, m.dim()
	alpha, beta := f[:e], f[e:]
	st := m.newState()
	m.prepare(st, alpha)
	wantGrad := grad != nil || hess != nil
	wantHess := hess != nil
	var tot *accum
	if m.groups != nil {
		tot = m.accumulateGroups(beta, st, wantGrad, wantHess)
	} else {
		tot = m.accumulateRecords(beta, st, wantGrad, wantHess)
	}
	if !wantGrad {
		return tot.loss
	}
	if m.link == LinkCloglog {
		// survival terms of cloglog: interval s (0-based) is survived by
		// every record with k_i > s, each contributing exp(a_s) w_i to the
		// first and second derivatives in z.
		var suffix float64
		for s := m.q - 1; s >= 0; s-- {
			suffix += tot.ws[s+1]
			c := st.ea[s] * suffix
			tot.gs[s] += c
			tot.hs[s] += c
		}
	}
	if grad != nil {
		for j := range grad {
			grad[j] = 0
		}
		for s := 0; s < m.q; s++ {
			row := m.basis[s*e : (s+1)*e]
			for j, b := range row {
				grad[j] += tot.gs[s] * b
			}
		}
		copy(grad[e:], tot.gb)
	}
	if wantHess {
		for j := range hess {
			hess[j] = 0
		}
		for s := 0; s < m.q; s++ {
			row := m.basis[s*e : (s+1)*e]
			h := tot.hs[s]
			for a := 0; a < e; a++ {
				for b := 0; b < e; b++ {
					hess[a*dim+b] += h * row[a] * row[b]
				}
			}
		}
		for a := 0; a < e; a++ {
			for j := 0; j < p; j++ {
				hess[a*dim+e+j] = tot.hab[a*p+j]
				hess[(e+j)*dim+a] = tot.hab[a*p+j]
			}
		}
		for a := 0; a < p; a++ {
			for b := 0; b <= a; b++ {
				hess[(e+a)*dim+e+b] = tot.hbb[a*p+b]
				hess[(e+b)*dim+e+a] = tot.hbb[a*p+b]
			}
		}
	}
	return tot.loss
}

// accumulateRecords sums every record's loss and derivatives (one worker
// per core, each over a contiguous share of the records; the shares are
// added in worker order).
func (m *discreteModel) accumulateRecords(beta []float64, st *intervalState, wantGrad, wantHess bool) *accum {
	workers := m.workers
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	if max := m.n / 2048; workers > max {
		workers = max
	}
	if workers < 1 {
		workers = 1
	}
	chunk := (m.n + workers - 1) / workers
	bounds := make([]int, workers+1)
	for w := range bounds {
		bounds[w] = min(w*chunk, m.n)
	}
	return m.accumulateShares(bounds, wantGrad, wantHess, func(lo, hi int, ac *accum) {
		for i := lo; i < hi; i++ {
			m.record(i, beta, st, ac, wantGrad, wantHess)
		}
	})
}

// accumulateShares runs add over each worker's share [bounds[w],
// bounds[w+1]) on its own goroutine, each into its own accum, and adds
// the workers' sums in worker order (sumAccums).
func (m *discreteModel) accumulateShares(bounds []int, wantGrad, wantHess bool, add func(lo, hi int, ac *accum)) *accum {
	workers := len(bounds) - 1
	acs := make([]*accum, workers)
	var wg sync.WaitGroup
	for w := range workers {
		ac := m.newAccum(wantHess)
		acs[w] = ac
		lo, hi := bounds[w], bounds[w+1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			add(lo, hi, ac)
		}()
	}
	wg.Wait()
	return sumAccums(acs, wantGrad, wantHess)
}

// sumAccums adds the workers' sums into the first, in worker order: the
// loss, and with wantGrad the gradient parts (with wantHess the Hessian's).
func sumAccums(acs []*accum, wantGrad, wantHess bool) *accum {
	tot := acs[0]
	for _, ac := range acs[1:] {
		tot.loss += ac.loss
		if !wantGrad {
			continue
		}
		addTo(tot.gs, ac.gs)
		addTo(tot.hs, ac.hs)
		addTo(tot.gb, ac.gb)
		if ac.ws != nil {
			addTo(tot.ws, ac.ws)
		}
		if wantHess {
			addTo(tot.hab, ac.hab)
			addTo(tot.hbb, ac.hbb)
		}
	}
	return tot
}

func addTo(dst, src []float64) {
	for i, v := range src {
		dst[i] += v
	}
}

// recordLossGrad returns l(f; d_i) and writes its gradient into grad (len
// dim); st must have been prepared with f's alpha. It is the per-record
// routine of the pSGLD minibatch: O(s_i) work for logit and probit, O(1) for
// cloglog, no person-period rows.
func (m *discreteModel) recordLossGrad(i int, beta []float64, st *intervalState, grad []float64) float64 {
	e, p := m.e, m.p
	xi := m.x[i*p : (i+1)*p]
	u := dotBeta(beta, xi)
	k := int(m.s[i]) - 1
	ga := grad[:e]
	for j := range ga {
		ga[j] = 0
	}
	var loss, gsum float64
	switch {
	case m.link == LinkCloglog:
		w := math.Exp(u)
		loss = w * st.p0[k]
		gsum = loss
		pr := st.p1[k*e : (k+1)*e]
		for j := range ga {
			ga[j] = w * pr[j]
		}
	case m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit && e == 3:
		// the default e = 3, the pSGLD chain's inner loop: the same
		// operations in the same order as the general case below (the
		// same bits), the gradient held in registers
		w := math.Exp(u)
		prod := 1.0
		var g0, g1, g2 float64
		basis := m.basis[:3*k]
		for s, es := range st.ea[:k] {
			t := es * w
			pk := t / (1 + t)
			prod *= 1 + t
			if prod > 1e250 {
				loss += math.Log(prod)
				prod = 1
			}
			gsum += pk
			row := basis[3*s : 3*s+3 : 3*s+3]
			g0 += pk * row[0]
			g1 += pk * row[1]
			g2 += pk * row[2]
		}
		ga[0], ga[1], ga[2] = g0, g1, g2
		loss += math.Log(prod)
	case m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit:
		w := math.Exp(u)
		prod := 1.0
		for s, es := range st.ea[:k] {
			t := es * w
			pk := t / (1 + t)
			prod *= 1 + t
			if prod > 1e250 {
				loss += math.Log(prod)
				prod = 1
			}
			gsum += pk
			row := m.basis[s*e : (s+1)*e]
			for j, b := range row {
				ga[j] += pk * b
			}
		}
		loss += math.Log(prod)
	default:
		for s := 0; s < k; s++ {
			l, g, _ := m.link.pair(st.a[s]+u, false)
			loss += l
			gsum += g
			row := m.basis[s*e : (s+1)*e]
			for j, b := range row {
				ga[j] += g * b
			}
		}
	}
	l, g, _ := m.link.pair(st.a[k]+u, m.event[i])
	loss += l
	gsum += g
	row := m.basis[k*e : (k+1)*e]
	for j, b := range row {
		ga[j] += g * b
	}
	for j, xv := range xi {
		grad[e+j] = gsum * xv
	}
	return loss
}
