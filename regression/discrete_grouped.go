package regression

import (
	"math"
	"runtime"
)

// patternGroups is a discrete-time problem's sufficient statistics when its
// covariates take few distinct values: the records grouped by covariate
// pattern (the preprocessed row x_i, compared bit for bit) and, per pattern
// g and interval s, the records at risk R_gs (s_i >= s) and the events D_gs
// (s_i = s, event). The loss is a sum over person-periods, and the
// person-periods of one pattern in one interval differ only in y: R_gs - D_gs
// of them have y = 0 and D_gs have y = 1, so
//
//	sum_i l_i = sum_g sum_{s <= last_g} (R_gs - D_gs) l(a_s + beta'x_g, 0) + D_gs l(a_s + beta'x_g, 1)
//
// with the same gradient and Hessian: one term per (pattern, interval)
// cell instead of one per person-period (sum_i s_i). groupPatterns builds
// it only when that is several times fewer terms.
type patternGroups struct {
	g    int       // patterns
	x    []float64 // g*p, the patterns' covariates
	r    []float64 // g*q, R_gs: records of pattern g with s_i >= s
	d    []float64 // g*q, D_gs: events of pattern g in interval s
	last []int32   // per pattern, its largest s_i: R_gs = 0 beyond
	// cells is sum_g last_g, the terms of one evaluation
	cells int
}

// groupingGain is how many times fewer terms than person-periods the
// cells must be for eval to use them (grouping costs one hash pass).
const groupingGain = 4

// groupPatterns groups m's records by covariate pattern, or returns nil
// when the cells would not be groupingGain times fewer than the
// person-periods (e.g. continuous covariates: it stops counting patterns
// beyond the number that could pay).
func groupPatterns(m *discreteModel) *patternGroups {
	n, p, q := m.n, m.p, m.q
	if n == 0 {
		return nil
	}
	var pp int64 // person-periods
	for _, s := range m.s {
		pp += int64(s)
	}
	// every pattern costs at least one cell: more than pp/gain patterns
	// cannot pay, nor more than n/2 (then the hashing alone costs more than
	// it saves)
	maxG := min(pp/groupingGain, int64(n/2))
	if maxG < 1 {
		return nil
	}
	// open addressing, load factor at most 1/2, grown by doubling: the
	// table stays the size of the patterns (in the cache), not of n. A
	// slot holds the pattern's index + 1 (0: empty) in its low 32 bits and
	// its hash's top 32 bits above, so a probe rarely reads a pattern.
	size := 1024
	table := make([]uint64, size)
	hashes := make([]uint64, 0, 512)
	mask := uint64(size - 1)
	gid := make([]int32, n)
	var x []float64
	g := 0
	for i := 0; i < n; i++ {
		xi := m.x[i*p : (i+1)*p]
		h := patternHash(xi)
		tag := h &^ (1<<32 - 1)
		slot := h & mask
		for {
			e := table[slot]
			if e == 0 {
				if int64(g) == maxG {
					return nil
				}
				g++
				table[slot] = tag | uint64(g)
				x = append(x, xi...)
				hashes = append(hashes, h)
				gid[i] = int32(g - 1)
				if 2*g > size {
					size *= 2
					table, mask = make([]uint64, size), uint64(size-1)
					for k, hk := range hashes {
						sl := hk & mask
						for table[sl] != 0 {
							sl = (sl + 1) & mask
						}
						table[sl] = hk&^(1<<32-1) | uint64(k+1)
					}
				}
				break
			}
			if e&^(1<<32-1) == tag {
				if k := int(uint32(e)) - 1; sameBits(x[k*p:(k+1)*p], xi) {
					gid[i] = int32(k)
					break
				}
			}
			slot = (slot + 1) & mask
		}
	}
	// per (pattern, interval): the records ending there and the events, side
	// by side (one cache line per record)
	cnt := make([]int32, 2*g*q)
	last := make([]int32, g)
	for i, k := range gid {
		s := m.s[i]
		c := 2 * (int(k)*q + int(s) - 1)
		cnt[c]++
		if m.event[i] {
			cnt[c+1]++
		}
		if s > last[k] {
			last[k] = s
		}
	}
	pg := &patternGroups{g: g, x: x, r: make([]float64, g*q), d: make([]float64, g*q), last: last}
	for c := range pg.r {
		pg.r[c] = float64(cnt[2*c])
		pg.d[c] = float64(cnt[2*c+1])
	}
	for k := 0; k < g; k++ {
		row := pg.r[k*q : (k+1)*q]
		for s := q - 2; s >= 0; s-- {
			row[s] += row[s+1]
		}
		pg.cells += int(pg.last[k])
	}
	if int64(pg.cells)*groupingGain > pp {
		return nil
	}
	return pg
}

// patternHash mixes the bit patterns of a covariate row (each word through
// murmur3's 64-bit finaliser: the low bits, which index the table, depend
// on every bit of every value, sign and exponent included).
func patternHash(xi []float64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, v := range xi {
		h ^= math.Float64bits(v)
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		h ^= h >> 33
	}
	return h
}

// sameBits reports whether a and b hold the same float64 bit patterns.
func sameBits(a, b []float64) bool {
	for j, v := range a {
		if math.Float64bits(v) != math.Float64bits(b[j]) {
			return false
		}
	}
	return true
}

// accumulateGroups is accumulateRecords over the cells of m.groups: the
// same loss, gradient and Hessian up to the order of summation.
func (m *discreteModel) accumulateGroups(beta []float64, st *intervalState, wantGrad, wantHess bool) *accum {
	pg := m.groups
	workers := m.workers
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, pg.cells/4096))
	// shares of about equal cells, contiguous patterns
	bounds := make([]int, workers+1)
	bounds[workers] = pg.g
	if workers > 1 {
		per, acc, w := (pg.cells+workers-1)/workers, 0, 1
		for k := 0; k < pg.g && w < workers; k++ {
			acc += int(pg.last[k])
			if acc >= w*per {
				bounds[w] = k + 1
				w++
			}
		}
		for ; w < workers; w++ {
			bounds[w] = pg.g
		}
	}
	return m.accumulateShares(bounds, wantGrad, wantHess, func(lo, hi int, ac *accum) {
		for k := lo; k < hi; k++ {
			m.pattern(k, beta, st, ac, wantGrad, wantHess)
		}
	})
}

// pattern accumulates pattern k's cells into ac, as record does a record's
// person-periods.
func (m *discreteModel) pattern(k int, beta []float64, st *intervalState, ac *accum, wantGrad, wantHess bool) {
	pg := m.groups
	e, p, q := m.e, m.p, m.q
	xk := pg.x[k*p : (k+1)*p]
	u := dotBeta(beta, xk)
	last := int(pg.last[k])
	r := pg.r[k*q : k*q+last]
	d := pg.d[k*q : k*q+last]
	var gsum, hsum float64
	v := ac.v
	clear(v)
	gs, hs := ac.gs[:last], ac.hs[:last]
	if m.link == LinkLogit && st.maxA+math.Abs(u) < fastLimit {
		// z = a_s + u, t = exp(z): y = 0 rows l = log(1+t), g = t/(1+t);
		// y = 1 rows l - z, g - 1 = -1/(1+t); h = t/(1+t)² for both
		w := math.Exp(u)
		var loss float64
		for s, es := range st.ea[:last] {
			rs, ds := r[s], d[s]
			t := es * w
			inv := 1 / (1 + t)
			pk := t * inv
			loss += rs*math.Log1p(t) - ds*(st.a[s]+u)
			if !wantGrad {
				continue
			}
			gc := (rs-ds)*pk - ds*inv
			gs[s] += gc
			gsum += gc
			if wantHess {
				hc := rs * pk * inv
				hs[s] += hc
				hsum += hc
				row := m.basis[s*e : (s+1)*e]
				for j, b := range row {
					v[j] += hc * b
				}
			}
		}
		ac.loss += loss
	} else {
		for s := range last {
			rs, ds := r[s], d[s]
			z := st.a[s] + u
			var lc, gc, hc float64
			if n0 := rs - ds; n0 > 0 {
				l, g, h := m.link.pair(z, false)
				lc, gc, hc = n0*l, n0*g, n0*h
			}
			if ds > 0 {
				l, g, h := m.link.pair(z, true)
				lc += ds * l
				gc += ds * g
				hc += ds * h
			}
			ac.loss += lc
			if !wantGrad {
				continue
			}
			gs[s] += gc
			gsum += gc
			if wantHess {
				hs[s] += hc
				hsum += hc
				row := m.basis[s*e : (s+1)*e]
				for j, b := range row {
					v[j] += hc * b
				}
			}
		}
	}
	if !wantGrad {
		return
	}
	for j, xv := range xk {
		ac.gb[j] += gsum * xv
	}
	if !wantHess {
		return
	}
	ac.addHessX(v, xk, hsum)
}

// groups is groupPatterns(m), or nil when o asks for the fit record by
// record (noGroups: internal tests compare the two).
func (o DiscreteOptions) groups(m *discreteModel) *patternGroups {
	if o.noGroups {
		return nil
	}
	return groupPatterns(m)
}
