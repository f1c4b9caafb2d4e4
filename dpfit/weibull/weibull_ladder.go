package weibull

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// The LSP shape ladder (paper 002): its rungs, their probabilities and
// the grid sampler, and the engine that computes the ladder from the data.

// WeibullLadder holds the local-sensitivity intervals S^k = [Lower[k],
// Upper[k]] for k = 0..K+1. S^0 is the MLE point (NaN when the MLE does not
// exist), S^{K+1} = [0, Gamma], and S^{k-1} is contained in S^k for k >= 2.
// The ladder depends on the data but not on epsilon.
//
// The shape is released on the public grid {0, Grid, 2 Grid, ..., Gamma}
// (Grid = the configured Tolerance): rung k is the set of grid points in
// S^k but not in S^{k-1} (k >= 1), each interval end mapped to the nearest
// grid index (a monotone map, so nesting and the ladder property
// S^k(D) within S^{k+1}(D') carry over to the grid sets). The release is
// the exponential mechanism on that finite set with utility -rung and
// weight exp(-rung epsilon/4), sampled exactly (Sample).
type WeibullLadder struct {
	Lower, Upper []float64
	Gamma        float64
	// Grid is the public step of the released shape (WeibullConfig.Tolerance).
	Grid float64
}

// Rungs returns K.
func (l WeibullLadder) Rungs() int { return len(l.Lower) - 2 }

// gridPoints is the number of grid points in [0, Gamma].
func (l WeibullLadder) gridPoints() uint64 {
	return uint64(math.Round(l.Gamma/l.Grid)) + 1
}

// gridEnds returns rung k's interval as grid indices [lo, hi] (lo > hi when
// empty), k >= 1.
func (l WeibullLadder) gridEnds(k int) (lo, hi int64) {
	if k == len(l.Lower)-1 {
		return 0, int64(l.gridPoints()) - 1
	}
	return int64(math.Round(l.Lower[k] / l.Grid)), int64(math.Round(l.Upper[k] / l.Grid))
}

// GridCounts returns, for k = 0..K+1, the number of grid points on level k
// (grid points of S^k not in S^{k-1}; level 0 has none).
func (l WeibullLadder) GridCounts() []uint64 {
	out := make([]uint64, len(l.Lower))
	var prev uint64
	for k := 1; k < len(l.Lower); k++ {
		lo, hi := l.gridEnds(k)
		var n uint64
		if hi >= lo {
			n = uint64(hi - lo + 1)
		}
		out[k] = n - min(prev, n)
		prev = max(prev, n)
	}
	return out
}

// LevelLengths returns, for k = 0..K+1, the measure of level k on the
// grid: its number of grid points times Grid.
func (l WeibullLadder) LevelLengths() []float64 {
	c := l.GridCounts()
	out := make([]float64, len(c))
	for k, n := range c {
		out[k] = float64(n) * l.Grid
	}
	return out
}

// Level returns the rung of p: the smallest k >= 1 with p's grid point in
// S^k, i.e. minus the utility of p. It returns -1 outside [0, Gamma].
func (l WeibullLadder) Level(p float64) int {
	if !(p >= 0 && p <= l.Gamma) {
		return -1
	}
	return l.gridLevel(int64(math.Round(p / l.Grid)))
}

// gridLevel is the rung of grid index i (binary search over the nested
// sets S^1 within S^2 within ... within S^{K+1}).
func (l WeibullLadder) gridLevel(i int64) int {
	lo, hi := 1, len(l.Lower)-1 // S^hi contains i
	for lo < hi {
		mid := (lo + hi) / 2
		a, b := l.gridEnds(mid)
		if i >= a && i <= b {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// LogWeights returns ln(count_k Grid) - k epsilon/4 for k = 0..K+1 (-Inf
// for empty levels), epsilon being the release's total budget (LSP gets
// epsilon/2, and the utility has sensitivity 1).
func (l WeibullLadder) LogWeights(epsilon float64) []float64 {
	lens := l.LevelLengths()
	out := make([]float64, len(lens))
	for k, ln := range lens {
		if ln > 0 {
			out[k] = math.Log(ln) - float64(k)*epsilon/4
		} else {
			out[k] = math.Inf(-1)
		}
	}
	return out
}

// RungProbabilities returns the probability of each level for the given
// total epsilon (float64; for tests and reports — Sample does not use it).
func (l WeibullLadder) RungProbabilities(epsilon float64) []float64 {
	lw := l.LogWeights(epsilon)
	mx := slices.Max(lw)
	out := make([]float64, len(lw))
	tot := 0.0
	for k, v := range lw {
		out[k] = math.Exp(v - mx)
		tot += out[k]
	}
	for k := range out {
		out[k] /= tot
	}
	return out
}

// Sample draws the LSP shape for a release with total budget epsilon (LSP
// spends epsilon/2) exactly: a grid point i uniform on [0, Gamma] is
// accepted with probability exp(-(rung(i) - 1) e) by rung(i) - 1 exact
// Bernoulli(exp(-e)) draws, e = epsilon/4 rounded down to a multiple of
// 2^-30 (less than the stated budget, never more); otherwise it is
// redrawn. The accepted point has probability exactly
// exp(-rung(i) e) / sum_j exp(-rung(j) e): integer arithmetic throughout,
// no float inverse CDF. The expected number of proposals is
// (Gamma/Grid + 1) / sum_k count_k exp(-(k-1) e).
func (l WeibullLadder) Sample(src dp.Source, epsilon float64) (float64, error) {
	i, err := l.sampleGrid(src, epsilon)
	if err != nil {
		return 0, err
	}
	return float64(i) * l.Grid, nil
}

func (l WeibullLadder) sampleGrid(src dp.Source, epsilon float64) (int64, error) {
	if !(l.Grid > 0) || len(l.Lower) < 2 {
		return 0, errors.New("lsp sample: ladder has no grid")
	}
	num, den, err := dp.RationalDown(epsilon / 4)
	if err != nil {
		return 0, fmt.Errorf("lsp sample: %w", err)
	}
	n := l.gridPoints()
	for {
		i := int64(dp.Uint64n(src, n))
		k := l.gridLevel(i)
		ok := true
		for j := 1; j < k && ok; j++ {
			ok = dp.BernoulliExp(src, num, den)
		}
		if ok {
			return i, nil
		}
	}
}

// ComputeWeibullLadder computes the LSP ladder of a sample (times in data
// units; they are normalised with cfg.TimeMax, those beyond it censored at
// it, see normaliseWeibull). cfg.Epsilon is
// not used.
func ComputeWeibullLadder(c survival.Compressed, cfg WeibullConfig) (WeibullLadder, error) {
	cfg = cfg.WithDefaults()
	if cfg.Epsilon == 0 {
		cfg.Epsilon = 1 // not used here
	}
	if err := cfg.Validate(); err != nil {
		return WeibullLadder{}, fmt.Errorf("weibull ladder: %w", err)
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return WeibullLadder{}, fmt.Errorf("weibull ladder: %w", err)
	}
	return weibullComputeLadder(d, cfg), nil
}

// weibullLadderEngine evaluates the bound differences
//
//	hA_k(p) = min(N + k/(ep), 0)/(S + k)  - 1/p - (M - k omega)/(E - k)
//	hB_k(p) = (N - k/(ep))/S_{n-k}        - 1/p - (M + k omega)/(E + k)
//
// with S = sum c t^p, N = sum c t^p ln t, M = sum d ln t, E = sum d and
// S_{n-k} the sum of t^p over the n-k smallest records. A root of
// hA_k is the lower end of rung k, a root of hB_k the upper end.
type weibullLadderEngine struct {
	d      weibullData
	omega  float64
	kmax   int            // rungs 1..kmax are computed (kmax < E)
	cutG   []int          // distinct groups holding the (n-k)th record boundary, ascending
	cutOf  []int          // cutOf[k] = index into cutG
	cutR   []float64      // records of group cutG[cutOf[k]] inside the bottom n-k
	cL, cU []float64      // (M - k omega)/(E - k), (M + k omega)/(E + k)
	nTerms int            // Taylor terms J
	cellW  float64        // grid cell width
	cells  []*weibullCell // by grid cell, computed on first use
	// cellNeeds[j][g]: cell j holds cut group g's rows (a rung reading
	// that group has its upper end in cell j)
	cellNeeds [][]bool
	scratch   []float64
	inv       []float64 // 1/j for the Taylor terms (fast mode only)
}

// weibullCell holds the moments at the left end q of a grid cell:
// mom[j] = sum c t^q lt^j (j = 0..J), pre[g][j] the same over the groups
// below cut group g, grp[g][j] = t_g^q lt_g^j.
type weibullCell struct {
	q        float64
	mom      []float64
	pre, grp [][]float64
}

func newWeibullLadderEngine(d weibullData, cfg WeibullConfig) *weibullLadderEngine {
	e := &weibullLadderEngine{d: d, omega: cfg.Omega}
	e.kmax = min(cfg.Rungs, int(d.e)-1)
	if e.kmax < 1 {
		e.kmax = 0
		return e
	}
	// Bottom n-k records: walk groups from the top.
	e.cutOf = make([]int, e.kmax+1)
	e.cutR = make([]float64, e.kmax+1)
	g := len(d.count) - 1
	above := 0.0 // records in groups > g
	for k := 1; k <= e.kmax; k++ {
		for above+d.count[g] < float64(k) {
			above += d.count[g]
			g--
		}
		// the top k records take k-above from group g
		r := d.count[g] - (float64(k) - above)
		if len(e.cutG) == 0 || e.cutG[len(e.cutG)-1] != g {
			e.cutG = append(e.cutG, g)
		}
		e.cutOf[k] = len(e.cutG) - 1
		e.cutR[k] = r
	}
	slices.Reverse(e.cutG)
	for k := 1; k <= e.kmax; k++ {
		e.cutOf[k] = len(e.cutG) - 1 - e.cutOf[k]
	}
	e.cL = make([]float64, e.kmax+1)
	e.cU = make([]float64, e.kmax+1)
	for k := 1; k <= e.kmax; k++ {
		fk := float64(k)
		e.cL[k] = (d.sumDLog - fk*cfg.Omega) / (d.e - fk)
		// capped at 0 like f_U's numerator: M'/E' <= 0 always, and the
		// cap makes g_U monotone in k across neighbours (Lemma 1) also
		// where M + k omega > 0 (TestWeibullLadderCapNeeded)
		e.cU[k] = min(d.sumDLog+fk*cfg.Omega, 0) / (d.e + fk)
	}
	return e
}

// sums returns S, N and, per cut group, the prefix sum below it and t_g^p.
func (e *weibullLadderEngine) sums(p float64, pre, grp []float64) (s, nn float64) {
	ci := 0
	for i, l := range e.d.lt {
		ci, s, nn = e.addPoint(i, ci, l, math.Exp(p*l), s, nn, pre, grp)
	}
	return s, nn
}

// sumsStep is sums at the next grid point: pw holds t^p at the previous
// one and is multiplied by step = t^cellW.
func (e *weibullLadderEngine) sumsStep(pw, step, pre, grp []float64) (s, nn float64) {
	ci := 0
	for i, l := range e.d.lt {
		w := pw[i] * step[i]
		pw[i] = w
		ci, s, nn = e.addPoint(i, ci, l, w, s, nn, pre, grp)
	}
	return s, nn
}

// addPoint is one point of sums' scan: point i (log time l, weight
// w = t_i^p) adds count w to S and count w l to N, after recording S below
// it and w when it opens cut group ci; it returns the next cut group and
// the new sums (inlined: the scan's hot loop).
func (e *weibullLadderEngine) addPoint(i, ci int, l, w, s, nn float64, pre, grp []float64) (int, float64, float64) {
	if ci < len(e.cutG) && e.cutG[ci] == i {
		pre[ci] = s
		grp[ci] = w
		ci++
	}
	cw := e.d.count[i] * w
	return ci, s + cw, nn + cw*l
}

// powSteps returns the fast scan's factors step = t^cellW per point (the
// simulator's cached cell powers where the data come from it: the same
// numbers) and the running powers pw = t^0 = 1 that sumsStep advances.
func (e *weibullLadderEngine) powSteps() (step, pw []float64) {
	step = make([]float64, len(e.d.lt))
	pw = make([]float64, len(e.d.lt))
	var cached []float64 // t^cellW per simulator cell
	if e.d.pc != nil && len(e.d.cell) == len(e.d.lt) {
		cached = e.d.pc.at(1, e.cellW)
	}
	for i, l := range e.d.lt {
		if cached != nil {
			step[i] = cached[e.d.cell[i]] // the same number: exp(cellW l)
		} else {
			step[i] = math.Exp(e.cellW * l)
		}
		pw[i] = 1
	}
	return step, pw
}

func (e *weibullLadderEngine) hA(k int, p, s, nn float64) float64 {
	fk := float64(k)
	num := min(nn+fk/(math.E*p), 0)
	return num/(s+fk) - 1/p - e.cL[k]
}

func (e *weibullLadderEngine) hB(k int, p, nn, sBottom float64) float64 {
	fk := float64(k)
	return (nn-fk/(math.E*p))/sBottom - 1/p - e.cU[k]
}

func (e *weibullLadderEngine) cell(j int) *weibullCell {
	if c := e.cells[j]; c != nil {
		return c
	}
	J := e.nTerms
	nc := len(e.cutG)
	need := e.cellNeeds[j] // the cut groups whose rows this cell holds
	rowsNeeded := 0
	for _, n := range need {
		if n {
			rowsNeeded++
		}
	}
	// one allocation for the moments and the needed cut groups' rows
	back := make([]float64, J+2+2*rowsNeeded*(J+1))
	c := &weibullCell{q: float64(j) * e.cellW, mom: back[: J+2 : J+2]}
	rows := back[J+2:]
	if rowsNeeded > 0 { // only cut groups' rows are read through pre and grp
		pg := make([][]float64, 2*nc)
		c.pre, c.grp = pg[:nc:nc], pg[nc:]
	}
	var pw []float64 // t^q per simulator cell (the interval simulation)
	if e.inv != nil && e.d.pc != nil && len(e.d.cell) == len(e.d.lt) {
		pw = e.d.pc.at(j, e.cellW)
	}
	ci := 0
	for i, l := range e.d.lt {
		var w float64
		if pw != nil {
			w = pw[e.d.cell[i]] // the same number: exp(c.q l)
		} else {
			w = math.Exp(c.q * l)
		}
		if ci < nc && e.cutG[ci] == i {
			if need != nil && need[ci] {
				c.pre[ci] = rows[: J+1 : J+1]
				copy(c.pre[ci], c.mom[:J+1])
				g := rows[J+1 : 2*(J+1) : 2*(J+1)]
				rows = rows[2*(J+1):]
				v := w
				for t := range g {
					g[t] = v
					v *= l
				}
				c.grp[ci] = g
			}
			ci++
		}
		v := e.d.count[i] * w
		for t := range c.mom {
			c.mom[t] += v
			v *= l
		}
	}
	e.cells[j] = c
	return c
}

// taylor fills a[j] = delta^j / j!.
func (e *weibullLadderEngine) taylor(delta float64) []float64 {
	a := e.scratch[:e.nTerms+1]
	a[0] = 1
	if e.inv != nil { // fast (simulation): multiply by 1/j
		for j := 1; j < len(a); j++ {
			a[j] = a[j-1] * delta * e.inv[j]
		}
		return a
	}
	for j := 1; j < len(a); j++ {
		a[j] = a[j-1] * delta / float64(j)
	}
	return a
}

// evalCell returns S, N and, with bottom, S_{n-k} at p = c.q + delta from
// the moments (the cell holds the rows of rung k's cut group when the
// rung's upper end is in it: cellNeeds); without bottom sb is 0.
func (e *weibullLadderEngine) evalCell(c *weibullCell, delta float64, k int, bottom bool) (s, nn, sb float64) {
	if e.inv != nil { // fast (simulation): Horner's scheme, no term array
		J := e.nTerms
		s, nn = c.mom[J], c.mom[J+1]
		for j := J - 1; j >= 0; j-- {
			f := delta * e.inv[j+1]
			s = c.mom[j] + s*f
			nn = c.mom[j+1] + nn*f
		}
		if !bottom {
			return s, nn, 0
		}
		g := e.cutOf[k]
		r := e.cutR[k]
		pre, grp := c.pre[g], c.grp[g]
		sb = pre[J] + r*grp[J]
		for j := J - 1; j >= 0; j-- {
			sb = pre[j] + r*grp[j] + sb*(delta*e.inv[j+1])
		}
		return s, nn, sb
	}
	a := e.taylor(delta)
	for j := len(a) - 1; j >= 0; j-- { // small terms first
		s += a[j] * c.mom[j]
		nn += a[j] * c.mom[j+1]
	}
	if !bottom {
		return s, nn, 0
	}
	g := e.cutOf[k]
	r := e.cutR[k]
	for j := len(a) - 1; j >= 0; j-- {
		sb += a[j] * (c.pre[g][j] + r*c.grp[g][j])
	}
	return s, nn, sb
}

func weibullComputeLadder(d weibullData, cfg WeibullConfig) WeibullLadder {
	return weibullComputeLadderOpt(d, cfg, false)
}

// setGrid lays the scan's grid over [0, gamma] and returns its number of
// cells G: cells of width gamma/G with omega*width <= 1/4, so t^delta over
// a cell is a fast-converging series. With fast (the simulation's scan:
// the fast ladder and weibullSimSide) the grid is 4 times coarser
// (omega*width <= 1, a few more Taylor terms): the scan costs a quarter,
// and it finds the same first crossing wherever a function crosses zero at
// most once within a coarse cell. It sets the number of Taylor terms J
// (the first with x^J/J! < 1e-18, x = omega*width; at most 60), the
// series' scratch and, with fast, the table of 1/j.
func (e *weibullLadderEngine) setGrid(gamma, omega float64, fast bool) int {
	G := 16
	for float64(G) < 4*omega*gamma && G < 1<<20 {
		G *= 2
	}
	if fast {
		G = max(16, G/4)
	}
	e.cellW = gamma / float64(G)
	e.cells = make([]*weibullCell, G+1)
	x := omega * e.cellW
	term := 1.0
	for e.nTerms = 1; e.nTerms < 60; e.nTerms++ {
		term *= x / float64(e.nTerms)
		if term < 1e-18 {
			break
		}
	}
	e.scratch = make([]float64, e.nTerms+1)
	if fast {
		e.inv = make([]float64, e.nTerms+1)
		for j := 1; j < len(e.inv); j++ {
			e.inv[j] = 1 / float64(j)
		}
	}
	return G
}

// weibullComputeLadderOpt is weibullComputeLadder; with fast (the interval
// simulation only, never a release) the scan runs over a 4 times coarser
// grid and updates each t^p by one multiplication per grid step instead of
// an exp (relative rounding drift below 1e-13 over the scan), and each
// rung end is bracketed by rootBracket's secant steps instead of bisection:
// the ends agree with the release's to a grid step
// (TestWeibullFastLadderMatchesRelease).
func weibullComputeLadderOpt(d weibullData, cfg WeibullConfig, fast bool) WeibullLadder {
	K := cfg.Rungs
	gamma := cfg.Gamma
	lad := WeibullLadder{Lower: make([]float64, K+2), Upper: make([]float64, K+2), Gamma: gamma, Grid: cfg.Tolerance}
	for k := 1; k <= K+1; k++ {
		lad.Lower[k], lad.Upper[k] = 0, gamma
	}
	lad.Lower[0], lad.Upper[0] = math.NaN(), math.NaN()
	// S^0 (the MLE point) carries no grid point, so sampling never reads
	// it: the simulation skips the MLE
	if !fast {
		if mle, err := survival.FitWeibull(d.compressed()); err == nil {
			p := min(mle.Shape, gamma)
			lad.Lower[0], lad.Upper[0] = p, p
		}
	}

	e := newWeibullLadderEngine(d, cfg)
	if e.kmax == 0 {
		return lad
	}
	G := e.setGrid(gamma, cfg.Omega, fast)

	// First grid point (index 1..G) where hA > 0 and where hB >= 0; G+1 = none.
	firstA := make([]int, e.kmax+1)
	firstB := make([]int, e.kmax+1)
	for k := range firstA {
		firstA[k], firstB[k] = G+1, G+1
	}
	pre := make([]float64, len(e.cutG))
	grp := make([]float64, len(e.cutG))
	openA, openB := e.kmax, e.kmax
	// the functions' values on both sides of each first crossing (fast
	// mode: they start rootBracket's secant); NaN before grid point 1
	nan := math.NaN()
	endA := make([][2]float64, e.kmax+1)
	endB := make([][2]float64, e.kmax+1)
	for k := range endA {
		endA[k], endB[k] = [2]float64{nan, nan}, [2]float64{nan, nan}
	}
	var step, pw []float64
	if fast {
		step, pw = e.powSteps()
	}
	for j := 1; j <= G && (openA > 0 || openB > 0); j++ {
		p := float64(j) * e.cellW
		var s, nn float64
		if fast {
			s, nn = e.sumsStep(pw, step, pre, grp)
		} else {
			s, nn = e.sums(p, pre, grp)
		}
		for k := 1; k <= e.kmax; k++ {
			if firstA[k] > G {
				v := e.hA(k, p, s, nn)
				if v > 0 {
					firstA[k] = j
					openA--
				}
				endA[k] = [2]float64{endA[k][1], v}
			}
			if firstB[k] > G {
				g := e.cutOf[k]
				v := e.hB(k, p, nn, pre[g]+e.cutR[k]*grp[g])
				if v >= 0 {
					firstB[k] = j
					openB--
				}
				endB[k] = [2]float64{endB[k][1], geZero(v)}
			}
		}
	}

	iters := 0
	for w := e.cellW; w > cfg.Tolerance; w /= 2 {
		iters++
	}
	e.cellNeeds = make([][]bool, G+1)
	for k := 1; k <= e.kmax; k++ {
		if j := firstB[k]; j <= G {
			if e.cellNeeds[j-1] == nil {
				e.cellNeeds[j-1] = make([]bool, len(e.cutG))
			}
			e.cellNeeds[j-1][e.cutOf[k]] = true
		}
	}
	tol := cfg.Tolerance
	for k := 1; k <= e.kmax; k++ {
		// Lower end: keep lo with hA(lo) <= 0.
		l := gamma
		if j := firstA[k]; j <= G {
			c := e.cell(j - 1)
			f := func(x float64) float64 {
				s, nn, _ := e.evalCell(c, x, k, false)
				return e.hA(k, c.q+x, s, nn)
			}
			var lo float64
			if fast {
				lo, _ = rootBracket(f, e.cellW, iters, endA[k][0], endA[k][1])
			} else {
				lo, _ = bisectBracket(f, e.cellW, iters)
			}
			l = math.Floor((c.q+lo)/tol-1) * tol
		}
		// Upper end: keep hi with hB(hi) >= 0.
		u := gamma
		if j := firstB[k]; j <= G {
			c := e.cell(j - 1)
			// the bracket's "> 0" side is hB >= 0 (geZero)
			f := func(x float64) float64 {
				_, nn, sb := e.evalCell(c, x, k, true)
				return geZero(e.hB(k, c.q+x, nn, sb))
			}
			var hi float64
			if fast {
				_, hi = rootBracket(f, e.cellW, iters, endB[k][0], endB[k][1])
			} else {
				_, hi = bisectBracket(f, e.cellW, iters)
			}
			u = math.Ceil((c.q+hi)/tol+1) * tol
		}
		lad.Lower[k] = min(max(l, 0), gamma)
		lad.Upper[k] = min(max(u, 0), gamma)
	}
	for k := 2; k <= K; k++ {
		lad.Lower[k] = min(lad.Lower[k], lad.Lower[k-1])
		lad.Upper[k] = max(lad.Upper[k], lad.Upper[k-1])
	}
	return lad
}

// bisectBracket halves [0, width] iters times keeping f(lo) <= 0 < f(hi)
// (the ends themselves are not evaluated): the releases' root search.
func bisectBracket(f func(float64) float64, width float64, iters int) (lo, hi float64) {
	lo, hi = 0, width
	for it := 0; it < iters; it++ {
		mid := lo + (hi-lo)/2
		if f(mid) > 0 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, hi
}

// rootBracket returns a bracket [lo, hi] within [0, width] of width at
// most width/2^iters with f(lo) <= 0 < f(hi) (or an end of [0, width]),
// like bisectBracket, in fewer evaluations: secant steps through the last
// two points (starting from the ends, whose values flo = f(0) and fhi =
// f(width) the caller passes: NaN if unknown), kept inside the bracket,
// and once a step is small a probe half the final width beyond it on the
// root's side, which closes the bracket; a bisection step whenever the
// secant is not finite or leaves the bracket, and after two steps in a row
// that did not halve it.
// The interval simulation only (fast mode): the bracket it returns holds
// the same crossing as bisectBracket's to within the final width, so the
// snapped ladder ends agree to a grid step.
func rootBracket(f func(float64) float64, width float64, iters int, flo, fhi float64) (lo, hi float64) {
	w := width
	for range iters {
		w /= 2
	}
	lo, hi = 0, width
	if flo > 0 || !(fhi > 0) { // not a bracket: bisection's answer
		return bisectBracket(f, width, iters)
	}
	finite := func(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
	// the secant runs through the last two points evaluated
	x1, f1, x2, f2 := lo, flo, hi, fhi
	slow := 0 // steps in a row that did not halve the bracket
	for hi-lo > w {
		before := hi - lo
		x := lo + (hi-lo)/2
		if slow < 2 && finite(f1) && finite(f2) && f1 != f2 {
			if s := x2 - f2*(x2-x1)/(f2-f1); s > lo && s < hi {
				x = s
			}
		}
		x = min(max(x, lo+w/4), hi-w/4)
		fx := f(x)
		if fx > 0 {
			hi, fhi = x, fx
		} else {
			lo, flo = x, fx
		}
		step := math.Abs(x - x2)
		x1, f1, x2, f2 = x2, f2, x, fx
		if hi-lo > w && step < 64*w {
			// the secant has nearly converged: probe half the final
			// width beyond x on the root's side to close the bracket
			y := x + w/2
			if fx > 0 {
				y = x - w/2
			}
			if y > lo && y < hi {
				if fy := f(y); fy > 0 {
					hi, fhi = y, fy
				} else {
					lo, flo = y, fy
				}
			}
		}
		if hi-lo > before/2 {
			slow++
		} else {
			slow = 0
		}
	}
	return lo, hi
}

// geZero maps v to a value that is > 0 exactly when v >= 0 (0 to the
// smallest positive float): the upper ends keep hB >= 0 as the "> 0" side
// of rootBracket and bisectBracket.
func geZero(v float64) float64 {
	if v == 0 {
		return math.SmallestNonzeroFloat64
	}
	return v
}
