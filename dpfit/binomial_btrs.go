package dpfit

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// btrsMinMean is the mean n min(p, 1-p) from which BinomialSim uses BTRS:
// Hörmann's algorithm holds from 10 (its squeeze and hat are valid there);
// below, the waiting times cost fewer than 10 logarithms.
const btrsMinMean = 10

// BinomialSim draws Binomial(n, p) for interval simulations (never a
// release): binomial's waiting-time method for means below btrsMinMean, otherwise
// Hörmann's BTRS (transformed rejection with squeeze, "The generation of
// binomial random variates", J. Stat. Comput. Simul. 46, 1993), whose
// squeeze accepts about 86% of draws without a log-gamma, several times
// faster than the Cauchy-proposal rejection of gonum's sampler that
// binomial uses; of the rest, those within 15 of the mode are tested
// against the pmf's ratio to the mode by the product of its successive
// ratios (Hörmann's step 3.2), the others by Stirling's formula with its
// correction term to within 3e-14 (stirlingTail). Exact in
// distribution (rejection against the exact pmf); TestBinomialSim checks
// it against the pmf.
func BinomialSim(src *rand.ChaCha8, n int64, p float64) int64 {
	return binomialSim(src, n, p, math.NaN())
}

// BinomialProb is a probability of BinomialSim with the logarithm its
// waiting times take (ln(1 - min(p, 1 - p))) worked out once, for the
// many draws of a simulation at one probability (a bin's hazard, a
// cell's conditional probability): NewBinomialProb(p).Sim(src, n) is
// BinomialSim(src, n, p), draw for draw and word for word
// (TestBinomialProbMatchesBinomialSim).
type BinomialProb struct{ p, lq float64 }

// NewBinomialProb returns p with its logarithm.
func NewBinomialProb(p float64) BinomialProb {
	q := p
	if p > 0.5 && p < 1 {
		q = 1 - p // the probability BinomialSim and binomial flip to
	}
	return BinomialProb{p: p, lq: math.Log1p(-q)}
}

// Sim draws Binomial(n, p) as BinomialSim(src, n, p) does.
func (b BinomialProb) Sim(src *rand.ChaCha8, n int64) int64 { return binomialSim(src, n, b.p, b.lq) }

// binomialSim is BinomialSim with lq = ln(1 - min(p, 1 - p)) given (NaN:
// computed where needed).
func binomialSim(src *rand.ChaCha8, n int64, p, lq float64) int64 {
	switch {
	case n > 0 && p > 0.5 && p < 1:
		return n - binomialSim(src, n, 1-p, lq)
	case !(n > 0 && p > 0 && p <= 0.5 && float64(n)*p >= btrsMinMean):
		// binomial answers n <= 0, p <= 0 (or NaN) and p >= 1 without a
		// draw, and counts waiting times below btrsMinMean
		return binomial(src, n, p, lq)
	}
	nf := float64(n)
	q := 1 - p
	spq := math.Sqrt(nf * p * q)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	vr := 0.92 - 4.2/b
	// the constants of the exact test, computed on its first use: the
	// squeeze accepts most draws without them
	var alpha, m, h, r, nr, nm float64
	slow, slowLog := false, false
	unif := func() float64 { return float64(src.Uint64()>>11) * (1.0 / (1 << 53)) }
	for {
		u := unif() - 0.5
		v := unif()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > nf {
			continue
		}
		if us >= 0.07 && v <= vr {
			return int64(k)
		}
		if !(v > 0) || !(us > 0) {
			continue
		}
		if !slow {
			slow = true
			alpha = (2.83 + 5.1/b) * spq
			m = math.Floor((nf + 1) * p)
			r = p / q
			nr = (nf + 1) * r
		}
		v *= alpha / (a/(us*us) + b)
		// accept when v <= f(k)/f(m), f the pmf: near the mode by the
		// product of the pmf's successive ratios f(i)/f(i-1) = (n+1) r/i
		// - r (Hörmann's step 3.2, no logarithm), farther by log-gamma
		if km := k - m; km >= -15 && km <= 15 {
			f := 1.0
			if km > 0 {
				for i := m + 1; i <= k; i++ {
					f *= nr/i - r
				}
			} else {
				for i := k + 1; i <= m; i++ {
					v *= nr/i - r
				}
			}
			if v <= f {
				return int64(k)
			}
			continue
		}
		// ln(f(k)/f(m)) by Stirling's formula with its correction
		// (Hörmann's step 3.3): three logarithms instead of four
		// log-gammas
		if !slowLog {
			slowLog = true
			nm = nf - m + 1
			h = (m+0.5)*math.Log((m+1)/(r*nm)) + stirlingTail(m) + stirlingTail(nf-m)
		}
		nk := nf - k + 1
		if math.Log(v) <= h+(nf+1)*math.Log(nm/nk)+(k+0.5)*math.Log(nk*r/(k+1))-stirlingTail(k)-stirlingTail(nf-k) {
			return int64(k)
		}
	}
}

// binomialWaitingMean is the mean n min(p, 1-p) up to which binomial
// counts geometric waiting times; above it, gonum's rejection sampler
// (O(1) expected work) draws it.
const binomialWaitingMean = 30

// binomial draws Binomial(n, p): by counting geometric waiting times
// (O(n min(p, 1-p)) work) when the mean is small, by rejection (gonum's
// distuv.Binomial, O(1) expected) otherwise. BinomialSim uses it for
// means below btrsMinMean and for n <= 0, p <= 0 (or NaN) and p >= 1. Simulation only: not a private path.
// lq is ln(1 - min(p, 1 - p)) or NaN (then computed here).
func binomial(src *rand.ChaCha8, n int64, p, lq float64) int64 {
	switch {
	case n <= 0 || !(p > 0):
		return 0
	case p >= 1:
		return n
	case p > 0.5:
		return n - binomial(src, n, 1-p, lq)
	case float64(n)*p > binomialWaitingMean:
		return int64(distuv.Binomial{N: float64(n), P: p, Src: src}.Rand())
	}
	if math.IsNaN(lq) {
		lq = math.Log1p(-p)
	}
	var x, sum int64
	for {
		u := float64(src.Uint64()>>11+1) * (1.0 / (1 << 53)) // (0, 1]
		g := math.Floor(math.Log(u)/lq) + 1
		if g > float64(n-sum) {
			return x
		}
		sum += int64(g)
		x++
	}
}

// stirlingTailExact is the number of values of k for which stirlingTail
// reads a table (computed by log-gamma); above, its series' error is below
// 1/(1680 (k+1)^7) <= 3e-14.
const stirlingTailExact = 30

var stirlingTails = func() (t [stirlingTailExact]float64) {
	for k := range t {
		lg, _ := math.Lgamma(float64(k) + 1)
		t[k] = lg - ((float64(k)+0.5)*math.Log(float64(k)+1) - (float64(k) + 1) + 0.5*math.Log(2*math.Pi))
	}
	return t
}()

// stirlingTail returns ln k! - ((k + 1/2) ln(k+1) - (k+1) + ln(2 pi)/2),
// the correction of Stirling's formula (k a non-negative integer).
func stirlingTail(k float64) float64 {
	if k < stirlingTailExact {
		return stirlingTails[int(k)]
	}
	x := k + 1
	x2 := x * x
	return (1.0/12 - (1.0/360-1.0/1260/x2)/x2) / x
}
