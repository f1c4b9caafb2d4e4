package synth

import (
	"math"
	"math/rand/v2"
)

// DiscreteWorld is the discrete-time survival world of the regression
// studies (docs/inference.md) and of the regression tests that check the
// same fits: the public time domain [0, 1] cut into Intervals intervals,
// len(Beta) covariates uniform on [-1/sqrt(p), 1/sqrt(p)]^p (the cube
// inscribed in the unit ball, so no row is clipped), a per-interval hazard
// g^-1(Baseline + Beta'x) with g the logit (or, with Cloglog, the
// complementary log-log), and each record censored at an interval uniform
// in 1..Intervals.
type DiscreteWorld struct {
	Intervals int
	Baseline  float64
	Beta      []float64
	Cloglog   bool
}

// Draw draws n records from src: a record with its event in interval s (or
// censored there) has time (s - 0.5)/Intervals, the interval's midpoint, so
// that rounding never moves it into the next interval. The records are
// those of rand.New(src)'s Float64 and IntN draws (a *rand.Rand is a
// source and is drawn from as is: the same stream); a *rand.PCG source
// takes the per-interval event draws, the studies' inner loop, by direct
// calls (TestDiscreteWorldPCGPath: the same records, bit for bit).
func (w DiscreteWorld) Draw(src rand.Source, n int) (time []float64, event []bool, x [][]float64) {
	q, p := w.Intervals, len(w.Beta)
	rng, ok := src.(*rand.Rand) // not wrapped again: one call per draw
	if !ok {
		rng = rand.New(src)
	}
	pcg, _ := src.(*rand.PCG)
	h := math.Sqrt(1 / float64(p)) // sqrt(1/2) is 1/sqrt(2) correctly rounded
	time, event, x = make([]float64, n), make([]bool, n), make([][]float64, n)
	flat := make([]float64, n*p) // the rows share one array (one allocation)
	for i := 0; i < n; i++ {
		xi := flat[i*p : (i+1)*p : (i+1)*p]
		u := w.Baseline
		for j := range xi {
			xi[j] = (2*rng.Float64() - 1) * h
		}
		for j, b := range w.Beta {
			u += b * xi[j]
		}
		p := 1 / (1 + math.Exp(-u))
		if w.Cloglog {
			p = -math.Expm1(-math.Exp(u))
		}
		c := 1 + rng.IntN(q)
		s, ev := c, false
		for k := 1; k <= c; k++ {
			// rng.Float64(), as math/rand/v2 computes it
			var v uint64
			if pcg != nil {
				v = pcg.Uint64()
			} else {
				v = rng.Uint64()
			}
			if float64(v<<11>>11)/(1<<53) < p {
				s, ev = k, true
				break
			}
		}
		time[i], event[i], x[i] = (float64(s)-0.5)/float64(q), ev, xi
	}
	return time, event, x
}
