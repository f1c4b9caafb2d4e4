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

// weibullCoarseSide returns -1 or +1 when every split of the groups' counts
// s.gcnt (e events) puts S^K below or above the released shape (see above),
// 0 when it cannot tell. s must be prepared.
func weibullCoarseSide(s *weibullSim, e int64, cfg WeibullConfig, released float64) int {
	K := cfg.Rungs
	fk := float64(K)
	events := float64(e)
	cens := float64(s.n - e)
	if K < 1 || events-1 < fk || cens < fk {
		return 0
	}
	gamma, tol := cfg.Gamma, cfg.Tolerance
	margin := weibullSideMargin * tol
	G := 16 // the fast ladder's grid (weibullComputeLadderOpt with fast)
	for float64(G) < 4*cfg.Omega*gamma && G < 1<<20 {
		G *= 2
	}
	G = max(16, G/4)
	cellW := gamma / float64(G)
	const rel, abs = 1e-9, 1e-12
	var mlo, mhi float64 // M = sum d ln t <= 0
	for g, c := range s.gcnt {
		if c > 0 {
			mlo += c * s.nlt[s.group[g]]
			mhi += c * s.nlt[s.group[g+1]-1]
		}
	}
	mlo, mhi = mlo*(1+rel), mhi*(1-rel)
	// bounds of S and N at scan point j
	bounds := func(j int) (slo, shi, nlo, nhi float64) {
		p := float64(j) * cellW
		pw := s.pc.at(j, cellW)
		lstar := -1 / p // ln of t^p ln t's minimiser
		for g, c := range s.gcnt {
			if c == 0 {
				continue
			}
			lo, hi := s.group[g], s.group[g+1]-1
			a, b := pw[lo], pw[hi]
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
	// below: hB_K >= 0 for every split at the last scan point below
	if jb := int(math.Floor((released - 2*tol - margin) / cellW)); jb >= 1 && jb <= G {
		p := float64(jb) * cellW
		slo, _, nlo, _ := bounds(jb)
		if sb := slo - fk; sb > 0 {
			if v := (nlo-fk/(math.E*p))/sb - 1/p - min(mhi+fk*cfg.Omega, 0)/(events+fk); v > abs {
				return -1
			}
		}
	}
	// above: hA_K < 0 for every split at every scan point up to J
	J := int(math.Floor((released+2*tol+margin)/cellW)) + 1
	if J > G {
		return 0
	}
	for j := 1; j <= J; j++ {
		p := float64(j) * cellW
		_, shi, _, nhi := bounds(j)
		num := min(nhi+fk/(math.E*p), 0)
		if v := num/(shi+fk) - 1/p - (mlo-fk*cfg.Omega)/(events-fk); !(v < -abs) {
			return 0
		}
	}
	return 1
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
