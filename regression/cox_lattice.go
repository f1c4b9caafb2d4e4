package regression

import "math"

// Covariates on a lattice (issue 24): when every covariate takes values
// k / 10^d for integers k in a range of at most coxLatticeMax (ages in
// years, 0/1 indicators, a BMI to one decimal), a row's weight exp(x'beta)
// is the product of one table entry per covariate,
//
//	exp(beta_j (v - mean_j) - c_j)  for each value v of covariate j,
//
// c_j the largest exponent of covariate j's table (so every entry is at
// most 1 and the product's shift sum_j c_j bounds max eta as maxEta does).
// A Newton evaluation then computes a few hundred exponentials instead of
// one per row and no linear predictors; each row's weight is p table
// look-ups multiplied (within a few ulp of exp(eta - shift)). When the
// tables' spread sum_j (c_j - min entry exponent) exceeds coxLatticeSpread
// a product could underflow where exp(eta - maxEta) does not, and the
// evaluation takes the exact path (predictors, then exp per row).

// coxLatticeMax bounds the number of lattice points of one covariate.
const coxLatticeMax = 1 << 12

// coxLatticeSpread bounds the exponent range of the tables for the
// lattice path (exp(-600) = 2.6e-261: far above the smallest normal).
const coxLatticeSpread = 600

// coxLattice is the lattice of every covariate: value k0[j] + k (k = 0 ..
// size[j]-1) over scale[j], and per sorted row its index k (ids, n*p).
type coxLattice struct {
	scale []float64
	k0    []int64
	size  []int
	off   []int // offset of covariate j's table in tab
	ids   []uint16
	tab   []float64 // per lattice point: exp(beta_j x - c_j) at the last fill
	val   []float64 // per lattice point: the centred value x
}

// latticeScan accumulates the column sums (into sum) and the lattice of
// the covariates while the rows are read once: per covariate the smallest
// scale 10^d (d <= 3) with v = round(v 10^d)/10^d exactly for every value,
// and the range of the values.
type latticeScan struct {
	ok     bool
	scale  []float64
	lo, hi []float64
}

func newLatticeScan(p int) *latticeScan {
	ls := &latticeScan{ok: true, scale: make([]float64, p), lo: make([]float64, p), hi: make([]float64, p)}
	for j := range p {
		ls.scale[j] = 1
		ls.lo[j], ls.hi[j] = math.Inf(1), math.Inf(-1)
	}
	return ls
}

// add takes one row into the scan and its values into sum.
func (ls *latticeScan) add(x, sum []float64) {
	for j, v := range x {
		sum[j] += v
		if !ls.ok {
			continue
		}
		if v < ls.lo[j] {
			ls.lo[j] = v
		}
		if v > ls.hi[j] {
			ls.hi[j] = v
		}
		s := ls.scale[j]
		for math.Round(v*s)/s != v {
			if s >= 1000 {
				ls.ok = false
				break
			}
			s *= 10
		}
		ls.scale[j] = s
	}
}

// lattice returns the scanned lattice, or nil when a covariate is not on
// a small one.
func (ls *latticeScan) lattice() *coxLattice {
	if !ls.ok {
		return nil
	}
	p := len(ls.scale)
	lt := &coxLattice{scale: make([]float64, p), k0: make([]int64, p), size: make([]int, p), off: make([]int, p+1)}
	for j := range p {
		s := ls.scale[j]
		k0, k1 := math.Round(ls.lo[j]*s), math.Round(ls.hi[j]*s)
		if !(k1-k0 < coxLatticeMax) || math.Abs(k0) > 1<<52 {
			return nil
		}
		lt.scale[j], lt.k0[j], lt.size[j] = s, int64(k0), int(k1-k0)+1
		lt.off[j+1] = lt.off[j] + lt.size[j]
	}
	lt.tab = make([]float64, lt.off[p])
	return lt
}

// index returns covariate j's lattice index of v (on the lattice by
// construction).
func (lt *coxLattice) index(j int, v float64) uint16 {
	return uint16(int64(math.Round(v*lt.scale[j])) - lt.k0[j])
}

// fill computes the tables at beta for the covariate means and returns
// the shift sum_j c_j, and false when the tables' spread exceeds
// coxLatticeSpread (the caller then takes the exact path).
func (lt *coxLattice) fill(beta, mean []float64) (float64, bool) {
	var shift, spread float64
	for j, b := range beta {
		t := lt.tab[lt.off[j]:lt.off[j+1]]
		mx, mn := math.Inf(-1), math.Inf(1)
		for k := range t {
			// the centred value exactly as scatter stores it
			x := float64(lt.k0[j]+int64(k))/lt.scale[j] - mean[j]
			e := b * x
			t[k] = e
			mx, mn = math.Max(mx, e), math.Min(mn, e)
		}
		for k, e := range t {
			t[k] = math.Exp(e - mx)
		}
		shift += mx
		spread += mx - mn
	}
	return shift, spread <= coxLatticeSpread
}

// centre fills the centred values of the lattice points (val), exactly
// the values scatter would store: (k0 + k)/scale is the original value.
func (lt *coxLattice) centre(mean []float64) {
	lt.val = make([]float64, len(lt.tab))
	for j := range lt.scale {
		for k := range lt.size[j] {
			lt.val[lt.off[j]+k] = float64(lt.k0[j]+int64(k))/lt.scale[j] - mean[j]
		}
	}
}

// addRows is accumulate of the lattice rows lo..hi-1 (weights the
// products of their table entries, values from val) into acc.
func (lt *coxLattice) addRows(acc []float64, lo, hi int) {
	p := len(lt.scale)
	var buf [16]float64
	xr := buf[:0]
	if p > len(buf) {
		xr = make([]float64, 0, p)
	}
	xr = xr[:p]
	for i := lo; i < hi; i++ {
		w := 1.0
		for j, k := range lt.ids[i*p : (i+1)*p] {
			w *= lt.tab[lt.off[j]+int(k)]
			xr[j] = lt.val[lt.off[j]+int(k)]
		}
		accumulate(acc, xr, w)
	}
}

// sumRows3 is addRows into a zero acc for 3 covariates, the ten sums kept
// in registers (the same additions in the same order).
func (lt *coxLattice) sumRows3(acc []float64, lo, hi int) {
	t0, v0 := lt.tab[lt.off[0]:lt.off[1]], lt.val[lt.off[0]:lt.off[1]]
	t1, v1 := lt.tab[lt.off[1]:lt.off[2]], lt.val[lt.off[1]:lt.off[2]]
	t2, v2 := lt.tab[lt.off[2]:lt.off[3]], lt.val[lt.off[2]:lt.off[3]]
	ids := lt.ids[3*lo : 3*hi]
	var a0, a1, a2, a3, b0, b1, b2, b3, b4, b5 float64
	for i := 0; i+3 <= len(ids); i += 3 {
		k := ids[i : i+3 : i+3]
		r := t0[k[0]] * t1[k[1]] * t2[k[2]]
		x0, x1, x2 := v0[k[0]], v1[k[1]], v2[k[2]]
		a0, a1, a2, a3, b0, b1, b2, b3, b4, b5 = addRow3(a0, a1, a2, a3, b0, b1, b2, b3, b4, b5, r, x0, x1, x2)
	}
	acc = acc[:10:10]
	acc[0], acc[1], acc[2], acc[3] = a0, a1, a2, a3
	acc[4], acc[5], acc[6], acc[7], acc[8], acc[9] = b0, b1, b2, b3, b4, b5
}

// ensureX materialises the sorted centred covariates and the linear
// predictors' buffer of lattice rows, for the exact path.
func (cd *coxData) ensureX() {
	if cd.x != nil {
		return
	}
	lt, p := cd.lat, cd.p
	cd.x, cd.eta = make([]float64, cd.n*p), make([]float64, cd.n)
	for i, k := range lt.ids {
		cd.x[i] = lt.val[lt.off[i%p]+int(k)]
	}
}
