package weibull

import (
	"crypto/sha256"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// A simulated shape's side of the released one from the groups' counts
// alone (weibullSim.countsCoarse), before the cells are drawn.
//
// The fast ladder's rung K reads the data through S(p) = sum c t^p, N(p) =
// sum c t^p ln t, M = sum d ln t, E and the sum of t^p over all records
// but the K largest (weibullLadderEngine). Given the groups' counts, every
// split of a group's count among its cells (the times within a group span
// a factor of at most exp(weibullGroupSpan)) gives sums between the bounds
// of putting the whole count at the group's first or last cell (t^p and ln
// t increase with t; t^p ln t falls then rises, its least value
// -1/(e p) at t = exp(-1/p)). The lower end's function hA_K increases with
// N and S (its numerator is at most 0) and falls with M; the upper end's
// hB_K increases with N and with the sum of the bottom records (S - K when
// the K largest records are censored at time_max, which the check
// requires) and falls with M. So:
//   - if hA_K's upper bound is negative at every scan point up to one
//     beyond the released shape (by the margin), rung K's lower end lies
//     beyond the released shape for every split: the draw is above;
//   - if hB_K's lower bound is positive at the last scan point below the
//     released shape (by the margin), rung K's upper end lies below it for
//     every split: the draw is below;
// and the nesting of the rungs is covered as in weibullSimSide. The bounds
// get a relative slack of 1e-9 (the ladder's scan multiplies powers, whose
// rounding drifts below 1e-13) and the functions an absolute one of 1e-12.

// weibullGroupPows holds t^p at each group's first and last cell for one
// exponent p.
type weibullGroupPows struct{ first, last []float64 }

// weibullFastGrid returns the fast ladder's scan grid: G cells of width
// cellW over [0, Gamma] (weibullComputeLadderOpt with fast).
func weibullFastGrid(cfg WeibullConfig) (G int, cellW float64) {
	G = 16
	for float64(G) < 4*cfg.Omega*cfg.Gamma && G < 1<<20 {
		G *= 2
	}
	G = max(16, G/4)
	return G, cfg.Gamma / float64(G)
}

// weibullCoarseSub is the number of pieces a scan cell is cut into where
// weibullCoarseSide bounds the rung's functions over intervals of the
// exponent.
const weibullCoarseSub = 16

// coarsePrep computes, once per candidate and before its simulated
// releases run (the tables are then read by every goroutine), the groups'
// end powers weibullCoarseSide reads: at the scan's grid points up to one
// past the released shape, and at the pieces of the scan cells next to it.
func (s *weibullSim) coarsePrep(cfg WeibullConfig, released float64) {
	G, cellW := weibullFastGrid(cfg)
	tol := cfg.Tolerance
	margin := weibullSideMargin * tol
	pows := func(p float64) weibullGroupPows {
		ng := len(s.group) - 1
		g := weibullGroupPows{first: make([]float64, ng), last: make([]float64, ng)}
		for i := range ng {
			g.first[i] = math.Exp(p * s.nlt[s.group[i]])
			g.last[i] = math.Exp(p * s.nlt[s.group[i+1]-1])
		}
		return g
	}
	jmax := min(G, int(math.Floor((released+2*tol+margin)/cellW))+1)
	s.cgrid = make([]weibullGroupPows, jmax+1)
	for j := 1; j <= jmax; j++ {
		s.cgrid[j] = pows(float64(j) * cellW)
	}
	sw := cellW / weibullCoarseSub
	xa, xb := released+margin+4*tol, released-margin-3*tol
	s.csub0 = max(0, min(int(math.Floor(xa/cellW))*weibullCoarseSub, int(math.Floor(xb/sw))))
	m1 := min(G*weibullCoarseSub, max(int(math.Ceil(xa/sw)), int(math.Ceil(xb/cellW))*weibullCoarseSub))
	s.csub = s.csub[:0]
	for m := s.csub0; m <= m1; m++ {
		s.csub = append(s.csub, pows(float64(m)*sw))
	}
}

// weibullCoarseSide returns -1 or +1 when every split of the groups' counts
// s.gcnt (e events) puts S^K below or above the released shape (see above),
// 0 when it cannot tell. s must be prepared and coarsePrep'd for cfg and
// released.
func weibullCoarseSide(s *weibullSim, e int64, cfg WeibullConfig, released float64) int {
	K := cfg.Rungs
	fk := float64(K)
	events := float64(e)
	cens := float64(s.n - e)
	if K < 1 || events-1 < fk || cens < fk {
		return 0
	}
	tol := cfg.Tolerance
	margin := weibullSideMargin * tol
	G, cellW := weibullFastGrid(cfg)
	const rel, abs = 1e-9, 1e-12
	var mlo, mhi float64 // M = sum d ln t <= 0
	for g, c := range s.gcnt {
		if c > 0 {
			mlo += c * s.nlt[s.group[g]]
			mhi += c * s.nlt[s.group[g+1]-1]
		}
	}
	mlo, mhi = mlo*(1+rel), mhi*(1-rel)
	// the rungs' constants (weibullLadderEngine's cL, cU) at the M that
	// makes hA largest and hB least
	cL := (mlo - fk*cfg.Omega) / (events - fk)
	cU := min(mhi+fk*cfg.Omega, 0) / (events + fk)
	// bounds of S and N at scan point p (powers pw)
	point := func(p float64, pw weibullGroupPows) (slo, shi, nlo, nhi float64) {
		lstar := -1 / p // ln of t^p ln t's minimiser
		for g, c := range s.gcnt {
			if c == 0 {
				continue
			}
			lo, hi := s.group[g], s.group[g+1]-1
			a, b := pw.first[g], pw.last[g]
			slo += c * a
			shi += c * b
			fa, fb := a*s.nlt[lo], b*s.nlt[hi]
			fmin, fmax := min(fa, fb), max(fa, fb)
			if s.nlt[lo] < lstar && lstar < s.nlt[hi] {
				fmin = -1 / (math.E * p)
			}
			nlo += c * fmin
			nhi += c * fmax
		}
		slo += cens // t = 1: t^p = 1, t^p ln t = 0
		shi += cens
		return slo * (1 - rel), shi * (1 + rel), nlo * (1 + rel), nhi * (1 - rel)
	}
	// bounds of S and N over the exponents [p1, p2] (powers w1, w2): t^p
	// within [t_first^p2, t_last^p1], t^p ln t within [ln t_first
	// t_last^p1, ln t_last t_first^p2]
	span := func(w1, w2 weibullGroupPows) (slo, shi, nlo, nhi float64) {
		for g, c := range s.gcnt {
			if c == 0 {
				continue
			}
			la, lb := s.nlt[s.group[g]], s.nlt[s.group[g+1]-1]
			slo += c * w2.first[g]
			shi += c * w1.last[g]
			nlo += c * la * w1.last[g]
			nhi += c * lb * w2.first[g]
		}
		slo += cens
		shi += cens
		return slo * (1 - rel), shi * (1 + rel), nlo * (1 + rel), nhi * (1 - rel)
	}
	// hA_K's upper bound over [p1, p2] and hB_K's lower bound
	hAhi := func(p1, p2, shi, nhi float64) float64 {
		return min(nhi+fk/(math.E*p1), 0)/(shi+fk) - 1/p2 - cL
	}
	hBlo := func(p1, slo, nlo float64) float64 {
		if sb := slo - fk; sb > 0 {
			return (nlo-fk/(math.E*p1))/sb - 1/p1 - cU
		}
		return math.Inf(-1)
	}
	sw := cellW / weibullCoarseSub
	// bounds of S and N over sub-cell m, the exponents [m, m+1] sub-steps
	// (span); ok false where either end is not a stored sub-cell, or m is 0
	subSpan := func(m int) (slo, shi, nlo, nhi float64, ok bool) {
		i := m - s.csub0
		if m == 0 || i < 0 || i+1 >= len(s.csub) {
			return 0, 0, 0, 0, false
		}
		slo, shi, nlo, nhi = span(s.csub[i], s.csub[i+1])
		return slo, shi, nlo, nhi, true
	}
	// below, at a grid point: hB_K >= 0 for every split at the last scan
	// point below the released shape, so rung K's upper end is at most
	// that point plus two grid steps
	if jb := int(math.Floor((released - 2*tol - margin) / cellW)); jb >= 1 && jb < len(s.cgrid) {
		p := float64(jb) * cellW
		slo, _, nlo, _ := point(p, s.cgrid[jb])
		if hBlo(p, slo, nlo) > abs {
			return -1
		}
	}
	// below, within the cell: hB_K > 0 for every split over [xb, the end
	// of xb's scan cell], so the secant's bracket of the upper end (in
	// that cell, or an earlier one) ends below xb plus its width (a grid
	// step at most) and the end below the released shape by the margin
	if xb := released - margin - 3*tol; xb > 0 {
		ok := true
		for m := int(math.Floor(xb / sw)); ok && m < int(math.Ceil(xb/cellW))*weibullCoarseSub; m++ {
			slo, _, nlo, _, inside := subSpan(m)
			ok = inside && hBlo(float64(m)*sw, slo, nlo) > abs
		}
		if ok {
			return -1
		}
	}
	// above: hA_K < 0 for every split at every scan point up to xa's
	// cell, and over that cell up to xa, so the secant's bracket of the
	// lower end starts beyond xa less its width; or at every scan point
	// up to one past xa's cell
	xa := released + margin + 4*tol
	j0 := int(math.Floor(xa / cellW))
	if j0+1 >= len(s.cgrid) || j0+1 > G {
		return 0
	}
	for j := 1; j <= j0; j++ {
		p := float64(j) * cellW
		_, shi, _, nhi := point(p, s.cgrid[j])
		if !(hAhi(p, p, shi, nhi) < -abs) {
			return 0
		}
	}
	ok := true
	for m := j0 * weibullCoarseSub; ok && float64(m)*sw < xa; m++ {
		_, shi, _, nhi, inside := subSpan(m)
		ok = inside && hAhi(float64(m)*sw, float64(m+1)*sw, shi, nhi) < -abs
	}
	if ok {
		return 1
	}
	p := float64(j0+1) * cellW
	_, shi, _, nhi := point(p, s.cgrid[j0+1])
	if hAhi(p, p, shi, nhi) < -abs && p-2*tol-margin > released {
		return 1
	}
	return 0
}

// weibullMechSeed is the seed of a simulated release's mechanism stream
// (the shape's two draws, then TLL's noise), apart from its data stream
// (seeded by drawSeed: the groups' counts, then the cells'), so that
// the cells can be drawn late, or not at all, without moving the
// mechanism's draws.
func weibullMechSeed(drawSeed [32]byte) [32]byte {
	var b [33]byte
	copy(b[:], drawSeed[:])
	b[32] = 'm'
	return sha256.Sum256(b[:])
}

// sumPowCells returns sum t^q over the records of the data set of the
// cells' counts s.cnt with e events (TLL's sum, as d.sumPow(q) of
// s.data(e) up to rounding), with a table of t^q per cell kept for q.
func (s *weibullSim) sumPowCells(e int64, q float64) float64 {
	if s.tq == nil || s.tqExp != q {
		s.tq = make([]float64, len(s.nlt))
		for j, l := range s.nlt {
			s.tq[j] = math.Exp(q * l)
		}
		s.tqExp = q
	}
	t := float64(s.n-e) * s.tq[len(s.tq)-1]
	for j, c := range s.cnt {
		if c > 0 {
			t += c * s.tq[j]
		}
	}
	return t
}

// weibullTLLSums is weibullTLL's noise on a data set's event count and sum
// of t^p (the interval simulation's pivot; releases use weibullTLL).
func weibullTLLSums(src dp.Source, events, sumPow, p, epsilon, omega float64) (delta, tau float64, err error) {
	delta, err = dp.LaplaceMechanism(src, events, 1, epsilon/4)
	if err != nil {
		return 0, 0, fmt.Errorf("tll event count: %w", err)
	}
	tau, err = dp.LaplaceMechanism(src, sumPow, 1, epsilon/4)
	if err != nil {
		return 0, 0, fmt.Errorf("tll sum of t^p: %w", err)
	}
	return delta, tau, nil
}
