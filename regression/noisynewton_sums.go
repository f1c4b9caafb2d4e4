package regression

import (
	"math"
	"runtime"
	"sync"
)

// The clipped per-record sums a MethodNewton step releases.

// clippedSums returns, at f, the sums over records of each block of the
// records' score vectors and Hessians, every record's block scaled to its
// clip: the alpha score to L2 norm cl[blkScoreA], the beta score to
// cl[blkScoreB], the alpha-alpha and beta-beta Hessian blocks (PSD) to
// trace cl[blkHessAA] and cl[blkHessBB], the cross block to Frobenius norm
// cl[blkHessAB] and further to the geometric mean of the diagonal blocks'
// factors (which keeps each record's clipped Hessian PSD). Records are
// split between workers as in eval; each record's terms are those of
// recordTerms (the logit product form and the cloglog prefix sums are
// exact rewritings of the per-period sums).
func (m *discreteModel) clippedSums(f []float64, cl [nBlocks]float64) newtonSums {
	return m.clippedSumsW(f, cl, nil)
}

// clippedSumsW is clippedSums with record i counted w[i] times (nil: once
// each; weight), for the distinct records of newtonCompact.
func (m *discreteModel) clippedSumsW(f []float64, cl [nBlocks]float64, weight []float64) newtonSums {
	e := m.e
	st := m.newState()
	m.prepare(st, f[:e])
	an := make([]float64, m.q) // ||A_s||^2
	for s := 0; s < m.q; s++ {
		an[s] = sqNorm(m.basis[s*e : (s+1)*e])
	}
	var pa []float64 // cloglog: pa[k] = sum_{s<k} exp(a_s) ||A_s||^2
	if m.link == LinkCloglog {
		pa = make([]float64, m.q+1)
		for k := 1; k <= m.q; k++ {
			pa[k] = pa[k-1] + st.ea[k-1]*an[k-1]
		}
	}
	var ub *unclippedBound
	if m.link == LinkLogit && weight == nil {
		ub = m.newUnclippedBound(st, an, cl)
	}
	workers := m.clipWorkers()
	acs := make([]*clipAccum, workers)
	var wg sync.WaitGroup
	chunk := (m.n + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, m.n)
		ac := m.newClipAccum()
		acs[w] = ac
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt := m.newRecordTerms()
			if ub != nil {
				rt.bound, rt.into = ub, ac
			}
			for i := lo; i < hi; i++ {
				m.recordTerms(i, f[e:], st, an, pa, rt)
				wt := 1.0
				if weight != nil {
					wt = weight[i]
				}
				ac.add(m, rt, cl, wt)
			}
		}()
	}
	wg.Wait()
	return m.clipSums(acs, st)
}

// clipWorkers is the number of workers of the clipped sums: one per
// core, at most one per 2048 records, at least one.
func (m *discreteModel) clipWorkers() int {
	return max(min(runtime.GOMAXPROCS(0), m.n/2048), 1)
}

// clipSums adds the workers' clipped sums in worker order (cloglog: and
// the survived intervals' terms) and maps them onto the blocks of
// newtonSums.
func (m *discreteModel) clipSums(acs []*clipAccum, st *intervalState) newtonSums {
	e, p := m.e, m.p
	tot := acs[0]
	for _, ac := range acs[1:] {
		addTo(tot.gs, ac.gs)
		addTo(tot.hs, ac.hs)
		addTo(tot.gw, ac.gw)
		addTo(tot.hw, ac.hw)
		addTo(tot.gb, ac.gb)
		addTo(tot.hab, ac.hab)
		addTo(tot.hbb, ac.hbb)
	}
	if m.link == LinkCloglog {
		// survived intervals: interval s is survived by every record with
		// k_i > s, each contributing exp(a_s) w_i times its clip factor
		var sg, sh float64
		for s := m.q - 1; s >= 0; s-- {
			sg += tot.gw[s+1]
			sh += tot.hw[s+1]
			tot.gs[s] += st.ea[s] * sg
			tot.hs[s] += st.ea[s] * sh
		}
	}
	var out newtonSums
	out[blkScoreA] = make([]float64, e)
	haa := make([]float64, e*e)
	for s := 0; s < m.q; s++ {
		row := m.basis[s*e : (s+1)*e]
		for a, ra := range row {
			out[blkScoreA][a] += tot.gs[s] * ra
			for b := a; b < e; b++ {
				haa[a*e+b] += tot.hs[s] * ra * row[b]
			}
		}
	}
	out[blkScoreB] = tot.gb
	out[blkHessAA] = upperOf(haa, e)
	out[blkHessAB] = tot.hab
	out[blkHessBB] = upperOf(tot.hbb, p)
	return out
}

// recordTerm holds one record's unclipped score and Hessian pieces.
type recordTerm struct {
	xi             []float64
	k              int       // survived intervals 0..k-1, last interval k
	w              float64   // cloglog: exp(beta'x)
	gw, hw         []float64 // logit/probit: per interval 0..k, dloss/dz and d2loss/dz2
	gLast, hLast   float64   // cloglog: the last interval's
	ga, va         []float64 // sum_s g_s A_s and sum_s h_s A_s
	gsum, hsum, tr float64   // sum_s g_s, sum_s h_s, sum_s h_s ||A_s||^2
	// logit, e = 3, no weights: with bound set, a record bound shows
	// unclipped in its alpha blocks has its per-interval terms added to
	// into's gs and hs as they are computed (direct), not stored in gw, hw,
	// and its ga and tr (used only by the alpha clips) not computed
	bound  *unclippedBound
	into   *clipAccum
	direct bool
}

// unclippedBound certifies, before a logit record's intervals are walked,
// that its alpha score and alpha-alpha Hessian will not be clipped (clip
// factors exactly 1), so that its per-interval terms can go straight into
// the sums: adding g_s is adding 1 g_s, in the same record order, so the
// sums keep their bits. In the product form g_s = t_s/(1 + t_s) <= t_s and
// h_s = g_s/(1 + t_s) <= t_s with t_s = exp(a_s) w, w = exp(beta'x), so
// ||sum_s g_s A_s|| <= w sum_{s<k} exp(a_s) ||A_s|| + |g_k| ||A_k|| and the
// trace sum_s h_s ||A_s||^2 <= w sum_{s<k} exp(a_s) ||A_s||^2 + h_k
// ||A_k||^2, both from prefix sums in O(1); the clips are shrunk by
// unclippedMargin, far above the rounding of either side (about 200
// roundings of 1.1e-16 each at q = 200).
type unclippedBound struct {
	pn, pt  []float64 // k = 0..q: sum_{s<k} exp(a_s) ||A_s||, sum_{s<k} exp(a_s) ||A_s||^2
	na      []float64 // ||A_s||
	ca, caa float64   // the alpha score and alpha-alpha Hessian clips, shrunk
}

const unclippedMargin = 1e-6

func (m *discreteModel) newUnclippedBound(st *intervalState, an []float64, cl [nBlocks]float64) *unclippedBound {
	b := &unclippedBound{pn: make([]float64, m.q+1), pt: make([]float64, m.q+1), na: make([]float64, m.q),
		ca: cl[blkScoreA] * (1 - unclippedMargin), caa: cl[blkHessAA] * (1 - unclippedMargin)}
	for s := range m.q {
		b.na[s] = math.Sqrt(an[s])
		b.pn[s+1] = b.pn[s] + st.ea[s]*b.na[s]
		b.pt[s+1] = b.pt[s] + st.ea[s]*an[s]
	}
	return b
}

func (m *discreteModel) newRecordTerms() *recordTerm {
	return &recordTerm{gw: make([]float64, m.q), hw: make([]float64, m.q), ga: make([]float64, m.e), va: make([]float64, m.e)}
}

// recordTerms fills rt with record i's score and Hessian pieces at
// (alpha of st, beta).
func (m *discreteModel) recordTerms(i int, beta []float64, st *intervalState, an, pa []float64, rt *recordTerm) {
	e, p := m.e, m.p
	xi := m.x[i*p : (i+1)*p]
	u := dotBeta(beta, xi)
	k := int(m.s[i]) - 1
	rt.xi, rt.k, rt.direct = xi, k, false
	ga, va := rt.ga, rt.va
	last := m.basis[k*e : (k+1)*e]
	switch {
	case m.link == LinkCloglog:
		w := math.Exp(u)
		rt.w = w
		pr := st.p1[k*e : (k+1)*e]
		for j := range ga {
			ga[j] = w * pr[j]
			va[j] = w * pr[j]
		}
		rt.gsum, rt.hsum, rt.tr = w*st.p0[k], w*st.p0[k], w*pa[k]
		g, h := m.link.gh(st.a[k]+u, m.event[i])
		rt.gLast, rt.hLast = g, h
		for j, b := range last {
			ga[j] += g * b
			va[j] += h * b
		}
		rt.gsum += g
		rt.hsum += h
		rt.tr += h * an[k]
		return
	case m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit && e == 3:
		m.logitTerms3(i, u, st, an, rt)
		return
	}
	// the general loops add into ga, va and the sums (the cases above set
	// them)
	clear(ga)
	clear(va)
	rt.gsum, rt.hsum, rt.tr = 0, 0, 0
	switch {
	case m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit:
		w := math.Exp(u)
		for s := 0; s < k; s++ {
			t := st.ea[s] * w
			r := 1 / (1 + t)
			rt.gw[s], rt.hw[s] = t*r, t*r*r
		}
	default:
		for s := 0; s < k; s++ {
			rt.gw[s], rt.hw[s] = m.link.gh(st.a[s]+u, false)
		}
	}
	rt.gw[k], rt.hw[k] = m.link.gh(st.a[k]+u, m.event[i])
	for s := 0; s <= k; s++ {
		g, h := rt.gw[s], rt.hw[s]
		row := m.basis[s*e : (s+1)*e]
		for j, b := range row {
			ga[j] += g * b
			va[j] += h * b
		}
		rt.gsum += g
		rt.hsum += h
		rt.tr += h * an[s]
	}
}

// logitTerms3 is recordTerms' logit product form for the default e = 3
// (the coverage studies' inner loop): the survived intervals' terms and
// their sums in one pass, the sums held in registers; the same operations
// in the same order as the general case (t r r is (t r) r: the same bits),
// rt as recordTerms leaves it (a direct record: logitDirect3's). u is
// beta'x_i.
func (m *discreteModel) logitTerms3(i int, u float64, st *intervalState, an []float64, rt *recordTerm) {
	k := rt.k
	w := math.Exp(u)
	g, h := logitGH(st.a[k]+u, m.event[i]) // the last interval's
	b := rt.bound
	rt.direct = b != nil && w*b.pn[k]+math.Abs(g)*b.na[k] <= b.ca && w*b.pt[k]+h*an[k] <= b.caa
	if rt.direct {
		m.logitDirect3(w, g, h, st, rt)
		return
	}
	gw, hw := rt.gw[:k+1], rt.hw[:k+1]
	var g0, g1, g2, v0, v1, v2, gsum, hsum, tr float64
	basis := m.basis[:3*k]
	ank := an[:k]
	for s, es := range st.ea[:k] {
		t := es * w
		r := 1 / (1 + t)
		gs := t * r
		hs := gs * r
		gw[s], hw[s] = gs, hs
		row := basis[3*s : 3*s+3 : 3*s+3]
		g0 += gs * row[0]
		g1 += gs * row[1]
		g2 += gs * row[2]
		v0 += hs * row[0]
		v1 += hs * row[1]
		v2 += hs * row[2]
		gsum += gs
		hsum += hs
		tr += hs * ank[s]
	}
	gw[k], hw[k] = g, h
	last := m.basis[3*k : 3*k+3 : 3*k+3]
	rt.ga[0], rt.ga[1], rt.ga[2] = g0+g*last[0], g1+g*last[1], g2+g*last[2]
	rt.va[0], rt.va[1], rt.va[2] = v0+h*last[0], v1+h*last[1], v2+h*last[2]
	rt.gsum, rt.hsum, rt.tr = gsum+g, hsum+h, tr+h*an[k]
}

// logitDirect3 is logitTerms3 for a record the bound certified unclipped
// in its alpha blocks (rt.direct): its per-interval terms go straight
// into rt.into's gs and hs, and the pieces only the alpha clips use (ga,
// tr) are not computed (recordClips takes ca = caa = 1, the factors the
// bound certifies; TestUnclippedDirectSameSums checks them on the full
// terms). The other pieces are logitTerms3's operations in its order:
// the same bits.
func (m *discreteModel) logitDirect3(w, g, h float64, st *intervalState, rt *recordTerm) {
	k := rt.k
	gw, hw := rt.into.gs[:k+1], rt.into.hs[:k+1]
	var v0, v1, v2, gsum, hsum float64
	basis := m.basis[:3*k]
	for s, es := range st.ea[:k] {
		t := es * w
		r := 1 / (1 + t)
		gs := t * r
		hs := gs * r
		gw[s] += gs
		hw[s] += hs
		row := basis[3*s : 3*s+3 : 3*s+3]
		v0 += hs * row[0]
		v1 += hs * row[1]
		v2 += hs * row[2]
		gsum += gs
		hsum += hs
	}
	gw[k] += g
	hw[k] += h
	last := m.basis[3*k : 3*k+3 : 3*k+3]
	rt.va[0], rt.va[1], rt.va[2] = v0+h*last[0], v1+h*last[1], v2+h*last[2]
	rt.gsum, rt.hsum = gsum+g, hsum+h
}

// clipAccum is one worker's share of the clipped sums.
type clipAccum struct {
	gs, hs []float64 // per interval: clipped alpha score and Hessian weights
	gw, hw []float64 // cloglog: per k, sum of clipped w_i over records with k_i = k
	gb     []float64 // p
	hab    []float64 // e*p
	hbb    []float64 // p*p (upper triangle used)
}

func (m *discreteModel) newClipAccum() *clipAccum {
	return &clipAccum{
		gs: make([]float64, m.q), hs: make([]float64, m.q),
		gw: make([]float64, m.q+1), hw: make([]float64, m.q+1),
		gb: make([]float64, m.p), hab: make([]float64, m.e*m.p), hbb: make([]float64, m.p*m.p),
	}
}

// recordClips returns the record's five clip factors (see clippedSums).
func recordClips(rt *recordTerm, cl [nBlocks]float64) (ca, cb, caa, cab, cbb float64) {
	xn := sqNorm(rt.xi)
	ca, caa = 1, 1 // direct: certified (logitDirect3 leaves ga and tr unset)
	if !rt.direct {
		ca = clipFactor(math.Sqrt(sqNorm(rt.ga)), cl[blkScoreA])
		caa = clipFactor(rt.tr, cl[blkHessAA])
	}
	cb = clipFactor(math.Abs(rt.gsum)*math.Sqrt(xn), cl[blkScoreB])
	cbb = clipFactor(rt.hsum*xn, cl[blkHessBB])
	cab = clipFactor(math.Sqrt(sqNorm(rt.va)*xn), cl[blkHessAB])
	if s := caa * cbb; s != 1 { // cab <= 1 = sqrt(1): min(cab, 1) is cab
		cab = math.Min(cab, math.Sqrt(s))
	}
	return ca, cb, caa, cab, cbb
}

func (ac *clipAccum) add(m *discreteModel, rt *recordTerm, cl [nBlocks]float64, wt float64) {
	ca, cb, caa, cab, cbb := recordClips(rt, cl)
	if wt != 1 {
		ca, cb, caa, cab, cbb = wt*ca, wt*cb, wt*caa, wt*cab, wt*cbb
	}
	k, xi, p := rt.k, rt.xi, m.p
	if m.link == LinkCloglog {
		ac.gw[k] += ca * rt.w
		ac.hw[k] += caa * rt.w
		ac.gs[k] += ca * rt.gLast
		ac.hs[k] += caa * rt.hLast
	} else if !rt.direct { // direct: added by logitTerms3 (ca = caa = 1)
		gs, hs, gw, hw := ac.gs[:k+1], ac.hs[:k+1], rt.gw[:k+1], rt.hw[:k+1]
		for s, g := range gw {
			gs[s] += ca * g
			hs[s] += caa * hw[s]
		}
	}
	// the beta blocks; each entry's expression as written out in full
	// (cb gsum xv is (cb gsum) xv), the slices cut to p so that the loops
	// carry no bounds checks
	gb, c := ac.gb[:len(xi)], cb*rt.gsum
	for j, xv := range xi {
		gb[j] += c * xv
	}
	for a, v := range rt.va {
		c := cab * v
		row := ac.hab[a*p : a*p+p][:len(xi)]
		for j, xv := range xi {
			row[j] += c * xv
		}
	}
	hb := cbb * rt.hsum
	for a, xa := range xi {
		c := hb * xa
		row, xr := ac.hbb[a*p+a:a*p+p], xi[a:]
		row = row[:len(xr)]
		for b, xv := range xr {
			row[b] += c * xv
		}
	}
}

// clipFactor is min(1, c/norm).
func clipFactor(norm, c float64) float64 {
	if norm > c {
		return c / norm
	}
	return 1
}

// upperOf returns the upper triangle (row by row) of the d×d row-major a.
func upperOf(a []float64, d int) []float64 {
	out := make([]float64, 0, hessianEntries(d))
	for r := 0; r < d; r++ {
		out = append(out, a[r*d+r:(r+1)*d]...)
	}
	return out
}
