package regression

// The records a MethodNewton step sums, deduplicated: two records with the
// same covariates (bit for bit), the same last interval and the same event
// flag have the same score and Hessian terms, so the same clip factors and
// the same clipped contribution; a clipped sum over the records is the sum
// over the distinct ones, each times its count (up to the order of the
// float additions). The released sums, and so the privacy of the release,
// are those of the records; only the work changes: one pass over the
// records per fit instead of one per step, and one evaluation per distinct
// record per step (the product's bounded covariates are often few-valued:
// age in years, sex, a grade).

// newtonCompact returns m's records grouped by covariate pattern, each
// pattern's records merged by (last interval, event) with their counts, or
// m itself (no weights, no groups) when the patterns are more than a
// quarter of the records (continuous covariates: no gain; it stops
// counting as soon as that is known). The pattern pass and the count per
// (pattern, last interval, event) cell cost far less than one step's
// evaluation of the records' terms.
func (m *discreteModel) newtonCompact() newtonRecords {
	n, p, q := m.n, m.p, m.q
	pat, np, ok := patternIndex(m, n/4)
	if !ok {
		return newtonRecords{m: m}
	}
	if np*2*q > 2*n {
		// a dense count per cell would take more memory than the records
		return compactSorted(m, pat, np)
	}
	// the records' counts per (pattern, last interval, event) cell, then
	// one distinct record per non-empty cell, pattern by pattern
	cells := 2 * q
	cnt := make([]float64, np*cells)
	rep := make([]int32, np) // a record of each pattern
	for i := n - 1; i >= 0; i-- {
		g := int(pat[i])
		cnt[g*cells+m.cellOf(i)]++
		rep[g] = int32(i)
	}
	nd := 0
	for _, v := range cnt {
		if v != 0 {
			nd++
		}
	}
	out := newCompactOut(m, np, nd)
	for g := range np {
		out.pattern(g, m.x[int(rep[g])*p:(int(rep[g])+1)*p], cnt[g*cells:(g+1)*cells])
	}
	return out.records()
}

// cellOf is record i's (last interval, event) cell: 2 (s-1), plus 1 for an
// event.
func (m *discreteModel) cellOf(i int) int {
	k := 2 * (int(m.s[i]) - 1)
	if m.event[i] {
		k++
	}
	return k
}

// compactOut collects a compaction's distinct records, pattern by pattern.
type compactOut struct {
	c      discreteModel
	w      []float64
	pstart []int32
}

// newCompactOut starts the compaction of m's records into np patterns and
// at most nd distinct records.
func newCompactOut(m *discreteModel, np, nd int) *compactOut {
	o := &compactOut{c: *m, w: make([]float64, 0, nd), pstart: make([]int32, np+1)}
	o.c.groups = nil
	o.c.s, o.c.event, o.c.x = make([]int32, 0, nd), make([]bool, 0, nd), make([]float64, 0, nd*m.p)
	return o
}

// pattern adds pattern g (covariates xi): one distinct record per
// non-empty cell of cnt (its (last interval, event) counts), weighted by
// its count; it zeroes cnt for the next pattern.
func (o *compactOut) pattern(g int, xi, cnt []float64) {
	o.pstart[g] = int32(len(o.w))
	for k, v := range cnt {
		if v == 0 {
			continue
		}
		o.c.s = append(o.c.s, int32(k/2+1))
		o.c.event = append(o.c.event, k%2 == 1)
		o.c.x = append(o.c.x, xi...)
		o.w = append(o.w, v)
		cnt[k] = 0
	}
}

// records ends the compaction.
func (o *compactOut) records() newtonRecords {
	o.pstart[len(o.pstart)-1] = int32(len(o.w))
	o.c.n = len(o.w)
	return newtonRecords{m: &o.c, w: o.w, pstart: o.pstart}
}

// compactSorted is newtonCompact's merge when the patterns times the cells
// are many: the records sorted by pattern (a counting sort on its index),
// then each pattern's records counted per (last interval, event).
func compactSorted(m *discreteModel, pat []int32, np int) newtonRecords {
	n, p, q := m.n, m.p, m.q
	// the records by pattern (a counting sort on the pattern's index)
	start := make([]int32, np+1)
	for _, g := range pat {
		start[g+1]++
	}
	for g := range np {
		start[g+1] += start[g]
	}
	pos := append([]int32(nil), start[:np]...)
	order := make([]int32, n)
	for i, g := range pat {
		order[pos[g]] = int32(i)
		pos[g]++
	}
	// within a pattern, one distinct record per (last interval, event)
	out := newCompactOut(m, np, min(n, 2*q*np)) // at most the distinct records
	cnt := make([]float64, 2*q)
	for g := range np {
		rec := order[start[g]:start[g+1]]
		for _, i := range rec {
			cnt[m.cellOf(int(i))]++
		}
		out.pattern(g, m.x[int(rec[0])*p:(int(rec[0])+1)*p], cnt)
	}
	return out.records()
}

// newtonRecords are the records a MethodNewton step sums: m's records
// counted w[i] times each (nil: once), grouped by covariate pattern when
// pstart is set (pattern g is records pstart[g] to pstart[g+1]-1).
type newtonRecords struct {
	m      *discreteModel
	w      []float64
	pstart []int32
}

// clippedSums is the clipped sums of the records at f (clippedSums of
// the original records, up to the order of the additions).
func (r newtonRecords) clippedSums(f []float64, cl [nBlocks]float64) newtonSums {
	if r.pstart != nil && r.m.link != LinkCloglog {
		return r.m.clippedSumsPatterns(f, cl, r.w, r.pstart)
	}
	return r.m.clippedSumsW(f, cl, r.w)
}

// patternIndex numbers the covariate patterns of m's records (bit for
// bit) and returns each record's pattern and the number of patterns; ok is
// false, and the count stopped, when there are more than maxP.
func patternIndex(m *discreteModel, maxP int) ([]int32, int, bool) {
	n, p := m.n, m.p
	if maxP < 1 {
		return nil, 0, false
	}
	// open addressing, load factor at most 1/2, grown by doubling (the
	// table stays the size of the patterns, in the cache); a slot holds
	// the pattern's index + 1 (0: empty)
	table := make([]int32, 1024)
	var hashes []uint64
	var rep []int32 // a record of each pattern
	pat := make([]int32, n)
	for i := range n {
		xi := m.x[i*p : (i+1)*p]
		h := patternHash(xi)
		mask := uint64(len(table) - 1)
		j := h & mask
		g := int32(-1)
		for ; table[j] != 0; j = (j + 1) & mask {
			v := table[j] - 1
			if hashes[v] == h && sameBits(m.x[int(rep[v])*p:(int(rep[v])+1)*p], xi) {
				g = v
				break
			}
		}
		if g < 0 {
			if len(rep) >= maxP {
				return nil, 0, false
			}
			g = int32(len(rep))
			hashes = append(hashes, h)
			rep = append(rep, int32(i))
			if 2*len(rep) > len(table) {
				table = make([]int32, 2*len(table))
				mask = uint64(len(table) - 1)
				for v, hv := range hashes {
					k := hv & mask
					for table[k] != 0 {
						k = (k + 1) & mask
					}
					table[k] = int32(v) + 1
				}
			} else {
				table[j] = g + 1
			}
		}
		pat[i] = g
	}
	return pat, len(rep), true
}
