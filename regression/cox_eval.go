package regression

import (
	"math"
	"runtime"
	"sync"
)

// coxGroupSumsMax bounds len(groups) * m, the per-group sums of the
// parallel evaluation (2 of them: 32 MB at the bound). Integer days give a
// few thousand groups; distinct float times give n groups and the
// sequential scan.
const coxGroupSumsMax = 1 << 21

// coxRowsPerWorker is the fewest rows a worker of the evaluation is given.
const coxRowsPerWorker = 1 << 16

// splitWork sets the evaluation's workers and their group bounds (about
// n/workers rows each, cut between groups), and the per-group sums when
// the groups are few enough.
func (cd *coxData) splitWork() {
	ng := len(cd.groups)
	if ng*cd.m > coxGroupSumsMax {
		cd.workers = 1
		cd.gt, cd.gd = nil, nil
		cd.wb = []int{0, ng}
		return
	}
	cd.gt = make([]float64, ng*cd.m)
	cd.gd = make([]float64, ng*cd.m)
	w := max(1, min(runtime.GOMAXPROCS(0), cd.n/coxRowsPerWorker))
	cd.setWorkers(w)
}

// setWorkers splits the groups between w workers (tests set it directly).
func (cd *coxData) setWorkers(w int) {
	ng := len(cd.groups)
	cd.workers = w
	cd.wb = make([]int, w+1)
	cd.wb[w] = ng
	k := 0
	for i := 1; i < w; i++ {
		target := int32(int64(cd.n) * int64(i) / int64(w))
		for k < ng && cd.groups[k].end <= target {
			k++
		}
		cd.wb[i] = k
	}
}

// parallel runs f(lo, hi) on each worker's groups and waits.
func (cd *coxData) parallel(f func(w, lo, hi int)) {
	if cd.workers <= 1 {
		f(0, cd.wb[0], cd.wb[len(cd.wb)-1])
		return
	}
	var wg sync.WaitGroup
	for w := range cd.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w, cd.wb[w], cd.wb[w+1])
		}()
	}
	wg.Wait()
}

// predictors fills cd.eta with x'beta and returns its maximum.
func (cd *coxData) predictors(beta []float64) float64 {
	p := cd.p
	maxs := make([]float64, cd.workers)
	cd.parallel(func(w, lo, hi int) {
		if lo == hi {
			maxs[w] = math.Inf(-1)
			return
		}
		r0, r1 := int(cd.groups[lo].start), int(cd.groups[hi-1].end)
		eta := cd.eta[r0:r1]
		x := cd.x[r0*p : r1*p]
		mx := math.Inf(-1)
		for i := range eta {
			var v float64
			for j, xj := range x[i*p : (i+1)*p] {
				v += beta[j] * xj
			}
			eta[i] = v
			if v > mx {
				mx = v
			}
		}
		maxs[w] = mx
	})
	mx := math.Inf(-1)
	for _, v := range maxs {
		mx = math.Max(mx, v)
	}
	return mx
}

// groupTerms adds every tied run's terms of the log partial likelihood
// (returned), the score u and the lower triangle of the information imat,
// the risk sets summed in time order. Each run's rows enter with weight
// exp(eta - maxEta) (1 when zero), or, on the lattice path (direct, or
// lattice rows at beta = 0), the product of their table entries.
func (cd *coxData) groupTerms(zero, direct bool, maxEta float64, efron bool, u, imat []float64) float64 {
	p, m := cd.p, cd.m
	if cd.x == nil && !direct {
		// lattice rows at beta = 0: every table entry is exp(0) = 1
		cd.lat.fill(make([]float64, p), cd.mean)
		direct = true
	}
	weight := func(i int) float64 {
		if zero {
			return 1
		}
		return math.Exp(cd.eta[i] - maxEta)
	}
	// add adds rows lo..hi-1 to acc, one row at a time in row order
	add := func(acc []float64, lo, hi int) {
		if direct {
			cd.lat.addRows(acc, lo, hi)
			return
		}
		for i := lo; i < hi; i++ {
			accumulate(acc, cd.x[i*p:(i+1)*p], weight(i))
		}
	}
	// sumZero is add into a zero acc (the same additions in the same
	// order), the sums kept in registers for 3 covariates
	sumZero := func(acc []float64, lo, hi int) {
		switch {
		case p != 3:
			add(acc, lo, hi)
		case direct:
			cd.lat.sumRows3(acc, lo, hi)
		default:
			sumRows3(acc, cd.x, lo, hi, weight)
		}
	}
	s, d := cd.s[:m], cd.d[:m]
	clear(s)
	var ll float64
	if cd.gt == nil {
		// one scan: each run's events into d, its censored rows into s,
		// then d into s
		for _, g := range cd.groups {
			clear(d)
			mid := int(g.start + g.nd)
			sumZero(d, int(g.start), mid)
			add(s, mid, int(g.end))
			for k, v := range d {
				s[k] += v
			}
			if g.nd > 0 {
				ll += cd.efronTerms(s, d, int(g.nd), efron, u, imat)
			}
		}
		return ll
	}
	// each run's sums apart (in parallel), then one scan in time order
	cd.parallel(func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			g := cd.groups[k]
			gt, gd := cd.gt[k*m:(k+1)*m], cd.gd[k*m:(k+1)*m]
			clear(gt)
			clear(gd)
			mid := int(g.start + g.nd)
			sumZero(gd, int(g.start), mid)
			sumZero(gt, mid, int(g.end))
			for j, v := range gd {
				gt[j] += v
			}
		}
	})
	for k, g := range cd.groups {
		for j, v := range cd.gt[k*m : (k+1)*m] {
			s[j] += v
		}
		if g.nd > 0 {
			ll += cd.efronTerms(s, cd.gd[k*m:(k+1)*m], int(g.nd), efron, u, imat)
		}
	}
	return ll
}

// sumRows3 is accumulate of rows lo..hi-1 (3 covariates, weights w(i))
// into a zero acc, the ten sums kept in registers.
func sumRows3(acc, x []float64, lo, hi int, w func(int) float64) {
	var a0, a1, a2, a3, b0, b1, b2, b3, b4, b5 float64
	for i := lo; i < hi; i++ {
		r := w(i)
		xi := x[3*i : 3*i+3 : 3*i+3]
		x0, x1, x2 := xi[0], xi[1], xi[2]
		a0, a1, a2, a3, b0, b1, b2, b3, b4, b5 = addRow3(a0, a1, a2, a3, b0, b1, b2, b3, b4, b5, r, x0, x1, x2)
	}
	acc = acc[:10:10]
	acc[0], acc[1], acc[2], acc[3] = a0, a1, a2, a3
	acc[4], acc[5], acc[6], acc[7], acc[8], acc[9] = b0, b1, b2, b3, b4, b5
}

// addRow3 is accumulate for 3 covariates on ten scalar sums (a: r and
// r x; b: the lower triangle of r x x'), the same operations in the same
// order: sumRows3's step, inlined so that the sums stay in registers.
func addRow3(a0, a1, a2, a3, b0, b1, b2, b3, b4, b5, r, x0, x1, x2 float64) (float64, float64, float64, float64, float64, float64, float64, float64, float64, float64) {
	r0, r1, r2 := r*x0, r*x1, r*x2
	return a0 + r, a1 + r0, a2 + r1, a3 + r2, b0 + r0*x0, b1 + r1*x0, b2 + r1*x1, b3 + r2*x0, b4 + r2*x1, b5 + r2*x2
}

// efronTerms adds one run's terms given its risk set s and its nd tied
// events' sums d (s0, s1, lower s2 each) to u and imat, and returns its
// term of the log partial likelihood without the events' own eta. The
// Efron terms (k = 0..nd-1, weight f = k/nd; f = 0 for Breslow) enter
// through five scalar sums over k,
//
//	A = sum 1/t, B = sum f/t, C = sum 1/t², E = sum f/t², F = sum f²/t²
//	with t = s0 - f d0,
//
// since sum (s1 - f d1)/t = s1 A - d1 B and
// sum (s1 - f d1)(s1 - f d1)'/t² = s1 s1' C - (s1 d1' + d1 s1') E + d1 d1' F:
// O(p²) per run, not per tied event.
func (cd *coxData) efronTerms(s, d []float64, nd int, efron bool, u, imat []float64) float64 {
	p := cd.p
	s1, s2 := s[1:1+p], s[1+p:]
	d1, d2 := d[1:1+p], d[1+p:]
	s0, d0 := s[0], d[0]
	var sA, sB, sC, sE, sF float64
	// The nd terms log(t) are summed as one log of their product, kept
	// within 1e±150 by moving its binary exponent out (exact).
	prod, exp2 := 1.0, 0
	for k := 0; k < nd; k++ {
		f := 0.0
		if efron {
			f = float64(k) / float64(nd)
		}
		t := s0 - f*d0
		inv := 1 / t
		inv2 := inv * inv
		sA += inv
		sB += f * inv
		sC += inv2
		sE += f * inv2
		sF += f * f * inv2
		prod *= t
		if !(prod > 1e-150 && prod < 1e150) {
			var e int
			prod, e = math.Frexp(prod)
			exp2 += e
		}
	}
	q := 0
	for a := 0; a < p; a++ {
		u[a] -= s1[a]*sA - d1[a]*sB
		for b := 0; b <= a; b++ {
			imat[a*p+b] += s2[q]*sA - d2[q]*sB -
				(s1[a]*s1[b]*sC - (s1[a]*d1[b]+d1[a]*s1[b])*sE + d1[a]*d1[b]*sF)
			q++
		}
	}
	return -(math.Log(prod) + float64(exp2)*math.Ln2)
}

// coxScatterChunk is the rows of one share of newCoxData's scatter: the
// events' centred sums are added per share, then in share order, so they
// do not depend on the number of cores.
const coxScatterChunk = 1 << 16

// scatter writes row i, centred, to sorted position pos[i] and sums the
// centred covariates over the events (cd.sumXEv), shares of rows on every
// core.
func (cd *coxData) scatter(pos []uint64, row func(int) []float64, event []bool, mean []float64) {
	n, p := cd.n, cd.p
	chunks := (n + coxScatterChunk - 1) / coxScatterChunk
	sums := make([]float64, chunks*p)
	workers := max(1, min(runtime.GOMAXPROCS(0), chunks))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := w; c < chunks; c += workers {
				sum := sums[c*p : (c+1)*p]
				for i := c * coxScatterChunk; i < min(n, (c+1)*coxScatterChunk); i++ {
					if cd.lat != nil {
						ids := cd.lat.ids[pos[i]*uint64(p) : (pos[i]+1)*uint64(p)]
						for j, v := range row(i) {
							ids[j] = cd.lat.index(j, v)
							if event[i] {
								sum[j] += v - mean[j]
							}
						}
						continue
					}
					xk := cd.x[pos[i]*uint64(p) : (pos[i]+1)*uint64(p)]
					for j, v := range row(i) {
						v -= mean[j]
						xk[j] = v
						if event[i] {
							sum[j] += v
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	for c := range chunks {
		for j, v := range sums[c*p : (c+1)*p] {
			cd.sumXEv[j] += v
		}
	}
}
