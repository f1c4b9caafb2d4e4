package weibull

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// The interval simulation's per-release streams and shared tables: what
// lets its simulated releases run on several goroutines (one stream per
// simulated release, one simulator per goroutine) and share the numbers
// every data set of a candidate would otherwise recompute.

// weibullDrawSeed is the seed of simulated release r of candidate shape
// p's stream: a hash of the release's seed, p and r. Each candidate gets
// its own streams, as it did when one stream ran through its releases in
// turn (whose draws, consumed in numbers that depend on p, fell out of
// step between candidates after the first release): keying them by r
// alone would make the candidates' scale pivots nearly the same numbers,
// and the scale interval, a union over candidates, narrower than the
// one the coverage studies validated.
func weibullDrawSeed(seed [32]byte, p float64, r int) [32]byte {
	var b [48]byte
	copy(b[:], seed[:])
	binary.LittleEndian.PutUint64(b[32:], math.Float64bits(p))
	binary.LittleEndian.PutUint64(b[40:], uint64(r))
	return sha256.Sum256(b[:])
}

// clone returns a simulator of the same data sets with its own buffers
// (the cell probabilities are shared, read-only), for another goroutine.
func (s *weibullSim) clone() *weibullSim {
	c := *s
	c.cnt = make([]float64, len(s.cnt))
	c.gcnt = make([]float64, len(s.gcnt))
	c.buf = weibullData{}
	c.tq = nil
	if s.nt != nil {
		// the normalised times are shared (read-only); the powers' cache
		// is the goroutine's own
		c.pc = &weibullPowCache{lt: s.nlt}
	}
	return &c
}

// weibullPowCache holds exp(m w ln t_j) = t_j^(m w) for the public time
// cells j of a simulator (ln t_j in lt) and the grid points m w of the
// fast ladder's scan (w its cell width), computed on first use: the
// simulated data sets of a candidate share their cells, so the ladder's
// powers are the same numbers, computed once instead of per data set.
type weibullPowCache struct {
	lt  []float64
	w   float64
	pow [][]float64 // pow[m], nil until used
}

// at returns the powers at grid point m of width w (the cache is reset
// when w changes).
func (c *weibullPowCache) at(m int, w float64) []float64 {
	if w != c.w {
		c.w, c.pow = w, nil
	}
	if m >= len(c.pow) {
		c.pow = append(c.pow, make([][]float64, m+1-len(c.pow))...)
	}
	if c.pow[m] == nil {
		q := float64(m) * w
		v := make([]float64, len(c.lt))
		for j, l := range c.lt {
			v[j] = math.Exp(q * l)
		}
		c.pow[m] = v
	}
	return c.pow[m]
}

// weibullMatchNodes is the number of Simpson cells of weibullMatchScale,
// and weibullMatchLogs the logs of its nodes i/weibullMatchNodes.
const weibullMatchNodes = 64

var weibullMatchLogs = func() (l [weibullMatchNodes + 1]float64) {
	for i := range l {
		l[i] = math.Log(float64(i) / weibullMatchNodes)
	}
	return l
}()

// weibullSimpsonWeights are Simpson's weights 1, 4, 2, ..., 4, 1 of
// weibullMatchScale's nodes.
var weibullSimpsonWeights = func() (w [weibullMatchNodes + 1]float64) {
	for i := range w {
		switch {
		case i == 0 || i == weibullMatchNodes:
			w[i] = 1
		case i%2 == 1:
			w[i] = 4
		default:
			w[i] = 2
		}
	}
	return w
}()
