package regression

import (
	"math"
	"sync"
)

// clippedSumsPatterns is clippedSumsW (logit and probit links) over
// records grouped by covariate pattern (pstart, from newtonCompact): the
// records of one pattern share the terms of their survived intervals, so
// each record's score and Hessian pieces are a prefix sum over the
// pattern's intervals plus its last interval's term, and the per-interval
// sums gather each pattern's records by last interval before one pass over
// the intervals. A record's clip factors are those of clippedSums (the
// same pieces, summed in another order); the cost is one pass over the
// intervals per pattern and O(e p) per record instead of O(q e) per record.
func (m *discreteModel) clippedSumsPatterns(f []float64, cl [nBlocks]float64, weight []float64, pstart []int32) newtonSums {
	e, q := m.e, m.q
	st := m.newState()
	m.prepare(st, f[:e])
	an := make([]float64, q)
	for s := range q {
		an[s] = sqNorm(m.basis[s*e : (s+1)*e])
	}
	np := len(pstart) - 1
	workers := m.clipWorkers()
	acs := make([]*clipAccum, workers)
	var wg sync.WaitGroup
	chunk := (np + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, np)
		ac := m.newClipAccum()
		acs[w] = ac
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := m.newPatternWork()
			for g := lo; g < hi; g++ {
				m.addPattern(int(pstart[g]), int(pstart[g+1]), f[e:], st, an, cl, weight, pw, ac)
			}
		}()
	}
	wg.Wait()
	return m.clipSums(acs, st)
}

// patternWork is one worker's scratch for addPattern.
type patternWork struct {
	gw, hw      []float64 // per interval, the y = 0 terms
	pga, pva    []float64 // (q+1)*e prefix sums of gw A_s, hw A_s
	pg, ph, ptr []float64 // q+1 prefix sums of gw, hw, hw ||A_s||^2
	cg, ch      []float64 // per last interval, the records' clipped weights
	vab         []float64 // e
	rt          recordTerm
	sgb, shbb   float64
}

func (m *discreteModel) newPatternWork() *patternWork {
	q, e := m.q, m.e
	return &patternWork{
		gw: make([]float64, q), hw: make([]float64, q),
		pga: make([]float64, (q+1)*e), pva: make([]float64, (q+1)*e),
		pg: make([]float64, q+1), ph: make([]float64, q+1), ptr: make([]float64, q+1),
		cg: make([]float64, q), ch: make([]float64, q), vab: make([]float64, e),
		rt: recordTerm{ga: make([]float64, e), va: make([]float64, e)},
	}
}

// addPattern adds the clipped terms of records lo..hi-1 (one covariate
// pattern) to ac.
func (m *discreteModel) addPattern(lo, hi int, beta []float64, st *intervalState, an []float64, cl [nBlocks]float64, weight []float64, pw *patternWork, ac *clipAccum) {
	e, p := m.e, m.p
	xi := m.x[lo*p : (lo+1)*p]
	u := dotBeta(beta, xi)
	kmax := 0
	for i := lo; i < hi; i++ {
		kmax = max(kmax, int(m.s[i])-1)
	}
	// the y = 0 terms of intervals 0..kmax-1 and their prefix sums
	if m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit {
		w := math.Exp(u)
		for s := 0; s < kmax; s++ {
			t := st.ea[s] * w
			r := 1 / (1 + t)
			pw.gw[s], pw.hw[s] = t*r, t*r*r
		}
	} else {
		for s := 0; s < kmax; s++ {
			pw.gw[s], pw.hw[s] = m.link.gh(st.a[s]+u, false)
		}
	}
	for s := 0; s < kmax; s++ {
		g, h := pw.gw[s], pw.hw[s]
		row := m.basis[s*e : (s+1)*e]
		for j, b := range row {
			pw.pga[(s+1)*e+j] = pw.pga[s*e+j] + g*b
			pw.pva[(s+1)*e+j] = pw.pva[s*e+j] + h*b
		}
		pw.pg[s+1] = pw.pg[s] + g
		pw.ph[s+1] = pw.ph[s] + h
		pw.ptr[s+1] = pw.ptr[s] + h*an[s]
	}
	clear(pw.cg[:kmax+1])
	clear(pw.ch[:kmax+1])
	clear(pw.vab)
	pw.sgb, pw.shbb = 0, 0
	rt := &pw.rt
	rt.xi = xi
	for i := lo; i < hi; i++ {
		k := int(m.s[i]) - 1
		g, h := m.link.gh(st.a[k]+u, m.event[i])
		last := m.basis[k*e : (k+1)*e]
		for j, b := range last {
			rt.ga[j] = pw.pga[k*e+j] + g*b
			rt.va[j] = pw.pva[k*e+j] + h*b
		}
		rt.gsum = pw.pg[k] + g
		rt.hsum = pw.ph[k] + h
		rt.tr = pw.ptr[k] + h*an[k]
		ca, cb, caa, cab, cbb := recordClips(rt, cl)
		if weight != nil {
			wt := weight[i]
			ca, cb, caa, cab, cbb = wt*ca, wt*cb, wt*caa, wt*cab, wt*cbb
		}
		// survived intervals 0..k-1 at the pattern's y = 0 terms, the
		// last at its own
		pw.cg[k] += ca
		pw.ch[k] += caa
		ac.gs[k] += ca * g
		ac.hs[k] += caa * h
		pw.sgb += cb * rt.gsum
		pw.shbb += cbb * rt.hsum
		for a, v := range rt.va {
			pw.vab[a] += cab * v
		}
	}
	// interval s < kmax is survived by the records whose last interval is
	// above s
	var sg, sh float64
	for s := kmax - 1; s >= 0; s-- {
		sg += pw.cg[s+1]
		sh += pw.ch[s+1]
		ac.gs[s] += pw.gw[s] * sg
		ac.hs[s] += pw.hw[s] * sh
	}
	for j, xv := range xi {
		ac.gb[j] += pw.sgb * xv
	}
	for a, v := range pw.vab {
		for j, xv := range xi {
			ac.hab[a*p+j] += v * xv
		}
	}
	for a, xa := range xi {
		c := pw.shbb * xa
		for b := a; b < p; b++ {
			ac.hbb[a*p+b] += c * xi[b]
		}
	}
}
