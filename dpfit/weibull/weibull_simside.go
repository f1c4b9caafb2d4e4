package weibull

import (
	"math"
	"math/rand/v2"
)

// The side of a simulated release's shape without its whole ladder.
//
// The test inversion reads a simulated shape only through its side of the
// released shape (below, equal, above: eval counts the simulated shapes on
// each side). The shape is drawn from the ladder's levels (a level k with
// probability proportional to count_k exp(-k epsilon/4), then a grid point
// of it: weibullLadderSampleFloat); every grid point of the levels 1..K
// lies in S^K = [Lower[K], Upper[K]], and the last level (K+1, the rest of
// [0, Gamma]) carries at most weibullSimTopMass (weibullSimRungs cuts the
// ladder there). So when S^K lies wholly on one side of the released shape,
// the simulated shape is on that side unless the inverse CDF's uniform u
// falls in the top weibullSimTopMass of (0, 1); weibullSimSide decides the
// first from rung K's two ends alone, and eval draws u as the sampler
// would: below 1 - weibullSimTopMass the side is the same as the whole
// ladder's draw with the same random numbers (the shape's value is not
// needed), otherwise the stream is rewound and the whole ladder computed.
// TestWeibullSimSideMatchesLadder checks it draw for draw.
//
// Rung K's ends bound every rung's: the lower end's function hA_k(p)
// increases with k at every p (its numerator min(N + k/(e p), 0) rises to
// 0 while S + k grows, and -(M - k omega)/(E - k) rises), so rung k < K
// first crosses zero at the same grid cell as rung K or later, and within
// that cell at a larger root; the upper end's hB_k decreases with k
// ((N - k/(e p))/S_{n-k} falls, -min(M + k omega, 0)/(E + k) falls), so
// its rungs cross earlier. The nesting of the ladder (Lower[K] the least
// of the rungs' lower ends, Upper[K] the largest upper end) thus moves
// rung K's ends by at most the root brackets' width (a grid step) plus
// the snapping (another), covered by weibullSideMargin.

// weibullSideMargin is the margin, in grid steps, by which S^K must miss
// the released shape for weibullSimSide to decide.
const weibullSideMargin = 6

// weibullSimTopMass returns an upper bound on the probability of the
// ladder's last level (K+1, all of [0, Gamma] beyond S^K) in a simulated
// release: at most gridPoints exp(-(K+1) epsilon/4) against the first
// non-empty level's weight, at least exp(-2 epsilon/4) (weibullSimRungs'
// argument), plus 1e-12 for the rounding of the sampler's cumulative
// sums.
func weibullSimTopMass(cfg WeibullConfig) float64 {
	grid := math.Round(cfg.Gamma/cfg.Tolerance) + 1
	return grid*math.Exp(-float64(cfg.Rungs-1)*cfg.Epsilon/4) + 1e-12
}

// weibullSimSide returns -1 when S^K of the fast ladder of d (cfg.Rungs =
// K rungs) lies below the released shape by more than weibullSideMargin
// grid steps, +1 when above, 0 when it cannot tell (S^K holds or nearly
// touches the released shape, or the data have fewer than K + 1 events so
// that the upper rungs are all of [0, Gamma]). It runs the fast ladder's
// scan (the same sums, bit for bit) for rung K only, stopping as soon as
// the side is known, and brackets rung K's end only when its first
// crossing's cell holds the released shape.
func weibullSimSide(d weibullData, cfg WeibullConfig, released float64) int {
	K := cfg.Rungs
	e := newWeibullLadderEngine(d, cfg)
	if e.kmax < K || K < 1 {
		return 0
	}
	gamma, tol := cfg.Gamma, cfg.Tolerance
	margin := weibullSideMargin * tol
	G := e.setGrid(gamma, cfg.Omega, true) // the fast ladder's grid
	e.cellNeeds = make([][]bool, G+1)
	iters := 0
	for w := e.cellW; w > tol; w /= 2 {
		iters++
	}
	step, pw := e.powSteps()
	pre := make([]float64, len(e.cutG))
	grp := make([]float64, len(e.cutG))
	nan := math.NaN()
	endA, endB := [2]float64{nan, nan}, [2]float64{nan, nan}
	openA := true
	g := e.cutOf[K]
	for j := 1; j <= G; j++ {
		p := float64(j) * e.cellW
		s, nn := e.sumsStep(pw, step, pre, grp)
		if openA {
			v := e.hA(K, p, s, nn)
			endA = [2]float64{endA[1], v}
			if v > 0 {
				openA = false
				// rung K's lower end is in cell j-1: at least its start
				// less two grid steps
				c := e.cell(j - 1)
				if c.q-2*tol-margin <= released && released <= p+margin {
					f := func(x float64) float64 {
						s, nn, _ := e.evalCell(c, x, K, false)
						return e.hA(K, c.q+x, s, nn)
					}
					lo, _ := rootBracket(f, e.cellW, iters, endA[0], endA[1])
					if l := math.Floor((c.q+lo)/tol-1) * tol; l-margin > released {
						return 1
					}
				} else if c.q-2*tol-margin > released {
					return 1
				}
			} else if p-2*tol-margin > released {
				// no crossing up to p: every rung's lower end is beyond it
				return 1
			}
		}
		v := e.hB(K, p, nn, pre[g]+e.cutR[K]*grp[g])
		endB = [2]float64{endB[1], geZero(v)}
		if v < 0 {
			if !openA && p-margin > released {
				return 0 // S^K holds the released shape
			}
			continue
		}
		// rung K's upper end is in cell j-1: at most p plus two grid steps
		if p+2*tol+margin < released {
			return -1
		}
		if openA || p-e.cellW-margin > released {
			return 0
		}
		if e.cellNeeds[j-1] == nil || !e.cellNeeds[j-1][g] {
			e.cellNeeds[j-1] = make([]bool, len(e.cutG))
			e.cellNeeds[j-1][g] = true
			e.cells[j-1] = nil // built for the lower end without rung K's rows
		}
		c := e.cell(j - 1)
		f := func(x float64) float64 {
			_, nn, sb := e.evalCell(c, x, K, true)
			return geZero(e.hB(K, c.q+x, nn, sb))
		}
		_, hi := rootBracket(f, e.cellW, iters, endB[0], endB[1])
		if u := math.Ceil((c.q+hi)/tol+1) * tol; u+margin < released {
			return -1
		}
		return 0
	}
	return 0
}

// weibullSimShapeSide draws a simulated release's shape as
// weibullLadderSampleFloat(weibullComputeLadderOpt(d, cfg, true), src,
// epsilon) would and returns it, or, when weibullSimSide decides and the
// sampler's level draw falls below the last level, a value on the same
// side of the released shape, having taken the same
// two draws from src (see weibullSimSide): -Inf below, +Inf above.
// cheap reports the second case.
func weibullSimShapeSide(d weibullData, cfg WeibullConfig, src *rand.ChaCha8, released float64) (shape float64, cheap bool) {
	if side := weibullSimSide(d, cfg, released); side != 0 {
		fork := *src
		u := float64(src.Uint64()>>11) * (1.0 / (1 << 53))
		if u < 1-weibullSimTopMass(cfg) {
			src.Uint64() // the grid point's draw
			return math.Inf(side), true
		}
		*src = fork
	}
	return weibullLadderSampleFloat(weibullComputeLadderOpt(d, cfg, true), src, cfg.Epsilon), false
}
