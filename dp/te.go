package dp

import (
	"fmt"
	"math"
	"math/big"
	"sort"
)

// TEVersion is the mechanism version mixed into the PRF input of
// TE-Sanitizer draws. Bump it when the sampler's mapping from random words to
// outputs changes.
const TEVersion uint16 = 1

// maxTEWindow bounds W so that every outcome keeps a probability far above
// the sampler's 2^-64 resolution.
const maxTEWindow = 100000

// TE is the TE-Sanitizer noise of paper 001 (mechanisms.md §1): a two-sided
// geometric Z with a = exp(-epsilon), clamped to [-W, W]:
//
//	P(D = d) = (1-a)/(1+a) a^|d|  for |d| < W,   P(D = ±W) = a^W/(1+a).
//
// The sampler is an exact integer inverse-CDF over a fixed-point table: one
// uniform 64-bit word u maps to the first d whose cumulative threshold
// exceeds u. The sampled distribution is therefore exactly the dyadic pmf
// Q(d) = (T_d - T_{d-1}) / 2^64, within 2^-64 of the formula, and the privacy
// loss reported (Loss) is computed exactly from Q itself, so the stated
// guarantee is the one that holds for the values actually drawn.
type TE struct {
	epsilon float64
	w       int
	cum     []uint64 // cum[i] = 2^64 * P(D <= i-W), i = 0..2W-1; the last outcome takes the rest
	q       []*big.Int
	loss    float64
}

// NewTE builds the sampler for epsilon > 0 and window W >= 1.
func NewTE(epsilon float64, w int) (*TE, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return nil, fmt.Errorf("te-sanitizer: epsilon must be positive and finite, got %v", epsilon)
	}
	if w < 1 || w > maxTEWindow {
		return nil, fmt.Errorf("te-sanitizer: window must be in [1, %d], got %d", maxTEWindow, w)
	}
	pmf := TEPMF(epsilon, w)
	// Smallest probability must stay well above the 2^-64 grid so the
	// quantised ratios stay within 1e-6 of the formula's.
	minP := math.Inf(1)
	for _, p := range pmf {
		minP = math.Min(minP, p)
	}
	if minP < 0x1p-44 {
		return nil, fmt.Errorf("te-sanitizer: epsilon*window too large (smallest outcome probability %.3g < 2^-44); lower epsilon or window", minP)
	}
	t := &TE{epsilon: epsilon, w: w, cum: make([]uint64, 2*w)}
	two64 := new(big.Float).SetPrec(256).SetMantExp(big.NewFloat(1), 64)
	acc := new(big.Float).SetPrec(256)
	prev := new(big.Int)
	t.q = make([]*big.Int, 2*w+1)
	for i := 0; i < 2*w; i++ {
		acc.Add(acc, new(big.Float).SetPrec(256).SetFloat64(pmf[i]))
		x := new(big.Float).SetPrec(256).Mul(acc, two64)
		xi, _ := x.Int(nil)
		// round to nearest
		frac := new(big.Float).SetPrec(256).Sub(x, new(big.Float).SetPrec(256).SetInt(xi))
		if frac.Cmp(big.NewFloat(0.5)) >= 0 {
			xi.Add(xi, big.NewInt(1))
		}
		if !xi.IsUint64() {
			return nil, fmt.Errorf("te-sanitizer: internal table overflow")
		}
		t.cum[i] = xi.Uint64()
		t.q[i] = new(big.Int).Sub(xi, prev)
		prev = xi
	}
	last := new(big.Int).Lsh(big.NewInt(1), 64)
	t.q[2*w] = last.Sub(last, prev)
	for i, q := range t.q {
		if q.Sign() <= 0 {
			return nil, fmt.Errorf("te-sanitizer: outcome %d has zero probability after quantisation", i-w)
		}
	}
	t.loss = maxLogRatio(t.q)
	return t, nil
}

// maxLogRatio returns ln(max q / min q) for positive integers q.
func maxLogRatio(q []*big.Int) float64 {
	mx, mn := q[0], q[0]
	for _, v := range q[1:] {
		if v.Cmp(mx) > 0 {
			mx = v
		}
		if v.Cmp(mn) < 0 {
			mn = v
		}
	}
	r := new(big.Rat).SetFrac(mx, mn)
	f, _ := r.Float64()
	return math.Log(f)
}

// Epsilon returns the configured epsilon.
func (t *TE) Epsilon() float64 { return t.epsilon }

// Window returns W.
func (t *TE) Window() int { return t.w }

// Loss returns the exact worst-case log ratio P(t̂|t_i)/P(t̂|t_j) over inputs
// both within W of the output for the UNCLAMPED output t + D, computed from
// the sampled (quantised) pmf. It equals TELoss(epsilon, W) to about 1e-12.
// The sanitizer publishes the clamped output; its loss is ClampedLoss.
func (t *TE) Loss() float64 { return t.loss }

// ClampedLoss returns the exact worst-case privacy loss of the value the
// sanitizer publishes: t̂ = clamp(t + D, 0, tmax) for integer inputs t in
// [0, tmax], over every output t̂ and every pair of inputs both within W of
// t̂, computed from the sampled (quantised) table by enumerating the
// clamped output pmf. The clamp merges every t + D <= 0 into the output 0,
// so P(0 | 0) / P(0 | W) = P(D <= 0) / P(D = -W) = e^(epsilon W): the result
// is max(L(epsilon, W), epsilon W) when tmax >= 2W (mechanisms.md §1
// erratum on the clamp), and can only be smaller on a shorter domain.
//
// Enumeration: an output o in (0, tmax) has P(o | t) = Q(o - t) for the
// inputs t in [max(0, o-W), min(tmax, o+W)], i.e. the offsets d in
// [max(o-tmax, -W), min(o, W)]; the outputs 0 and tmax have the tail sums
// P(D <= -t) and P(D >= tmax - t). Outputs in [W, tmax-W] all see the full
// offset range, so one of them stands for all; every other output is
// enumerated. Ratios are compared exactly in 128-bit integer arithmetic.
func (t *TE) ClampedLoss(tmax int64) float64 {
	if tmax <= 0 {
		return 0 // one possible output: it says nothing
	}
	w := int64(t.w)
	q := make([]uint64, len(t.q))
	for i, v := range t.q {
		q[i] = v.Uint64()
	}
	cum := func(d int64) uint64 { // P(D <= d) * 2^64 for d < W
		if d < -w {
			return 0
		}
		return t.cum[d+w]
	}
	tail := func(d int64) uint64 { // P(D >= d) * 2^64 for d > -W
		if d > w {
			return 0
		}
		return 0 - cum(d-1) // 2^64 - P(D <= d-1), exact mod 2^64 (d > -W)
	}
	best := ratio{1, 1}
	consider := func(r ratio) {
		if r.greater(best) {
			best = r
		}
	}
	// Lower boundary output 0: inputs t in [0, min(W, tmax)].
	tl := min(w, tmax)
	consider(ratio{cum(0), cum(-tl)})
	// Upper boundary output tmax: inputs t in [max(0, tmax-W), tmax],
	// P(tmax | t) = P(D >= tmax - t): largest at t = tmax, smallest at the
	// lowest input.
	consider(ratio{tail(0), tail(tmax - max(0, tmax-w))})
	// Interior outputs, in increasing order: both ends of the offset range
	// are non-decreasing in o, so a sliding-window maximum and minimum
	// (monotone deques of offsets) cost O(W) in all.
	var maxQ, minQ []int64 // offsets, q decreasing / increasing along each
	next := -w             // next offset to enter the window
	visit := func(o int64) {
		lo, hi := max(o-tmax, -w), min(o, w)
		for ; next <= hi; next++ {
			for len(maxQ) > 0 && q[maxQ[len(maxQ)-1]+w] <= q[next+w] {
				maxQ = maxQ[:len(maxQ)-1]
			}
			maxQ = append(maxQ, next)
			for len(minQ) > 0 && q[minQ[len(minQ)-1]+w] >= q[next+w] {
				minQ = minQ[:len(minQ)-1]
			}
			minQ = append(minQ, next)
		}
		for maxQ[0] < lo {
			maxQ = maxQ[1:]
		}
		for minQ[0] < lo {
			minQ = minQ[1:]
		}
		consider(ratio{q[maxQ[0]+w], q[minQ[0]+w]})
	}
	for o := int64(1); o < tmax && o <= w; o++ {
		visit(o) // o = W, when inside, has the full offset range
	}
	for o := max(w+1, tmax-w); o < tmax; o++ {
		visit(o)
	}
	f, _ := new(big.Rat).SetFrac(new(big.Int).SetUint64(best.num), new(big.Int).SetUint64(best.den)).Float64()
	return math.Log(f)
}

// ratio is num/den for positive 64-bit integers.
type ratio struct{ num, den uint64 }

// greater reports a/b > c/d exactly: a*d > c*b in 128 bits.
func (r ratio) greater(s ratio) bool {
	h1, l1 := mul64(r.num, s.den)
	h2, l2 := mul64(s.num, r.den)
	return h1 > h2 || (h1 == h2 && l1 > l2)
}

// PMF returns the exact sampled probabilities of D = -W..W.
func (t *TE) PMF() []float64 {
	out := make([]float64, len(t.q))
	for i, q := range t.q {
		f, _ := new(big.Rat).SetFrac(q, new(big.Int).Lsh(big.NewInt(1), 64)).Float64()
		out[i] = f
	}
	return out
}

// Sample maps one uniform 64-bit word to D in [-W, W].
func (t *TE) Sample(u uint64) int {
	i := sort.Search(len(t.cum), func(i int) bool { return u < t.cum[i] })
	return i - t.w
}

// TEPMF returns the formula's pmf of D = -W..W (index d+W).
func TEPMF(epsilon float64, w int) []float64 {
	a := math.Exp(-epsilon)
	out := make([]float64, 2*w+1)
	c := (1 - a) / (1 + a)
	for d := -w; d <= w; d++ {
		ad := float64(d)
		if d < 0 {
			ad = -ad
		}
		if d == -w || d == w {
			out[d+w] = math.Pow(a, float64(w)) / (1 + a)
		} else {
			out[d+w] = c * math.Pow(a, ad)
		}
	}
	return out
}

// TELoss is the corrected worst-case loss of TE-Sanitizer (mechanisms.md §1
// erratum): max(eps(W-1), eps W + ln(1-e^-eps), -ln(e^eps - 1)). The paper's
// claim eps*W understates it when epsilon is small.
func TELoss(epsilon float64, w int) float64 {
	e := epsilon
	return math.Max(e*float64(w-1), math.Max(e*float64(w)+math.Log1p(-math.Exp(-e)), -math.Log(math.Expm1(e))))
}

// TEClampedLoss is the worst-case loss of the published (clamped) output
// for the formula's pmf: max(L(epsilon, W), epsilon*min(W, tmax)). It is
// exact when tmax >= 2W and an upper bound otherwise (then no output sees
// every offset); (*TE).ClampedLoss is the exact value for the sampled table.
func TEClampedLoss(epsilon float64, w int, tmax int64) float64 {
	if tmax <= 0 {
		return 0
	}
	return math.Max(TELoss(epsilon, w), epsilon*float64(min(int64(w), tmax)))
}

// TEEpsilonForLoss returns the largest epsilon whose worst-case loss of the
// published value, TEClampedLoss(epsilon, W, tmax), is at most target, so
// configuration can state the loss it wants.
func TEEpsilonForLoss(target float64, w int, tmax int64) (float64, error) {
	if !(target > 0) || math.IsInf(target, 0) {
		return 0, fmt.Errorf("te-sanitizer: target loss must be positive and finite, got %v", target)
	}
	if tmax <= 0 {
		return 0, fmt.Errorf("te-sanitizer: time domain must be positive, got %d", tmax)
	}
	loss := func(e float64) float64 { return TEClampedLoss(e, w, tmax) }
	// The loss decreases then increases in epsilon (the max of a
	// quasi-convex and an increasing function); find its minimiser first.
	lo, hi := 1e-9, 50.0
	for range 200 {
		m1 := lo + (hi-lo)/3
		m2 := hi - (hi-lo)/3
		if loss(m1) < loss(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	emin := (lo + hi) / 2
	if loss(emin) > target {
		return 0, fmt.Errorf("te-sanitizer: no epsilon reaches worst-case loss %v with window %d (the least possible is %.4f)", target, w, loss(emin))
	}
	lo, hi = emin, emin
	for loss(hi) <= target {
		hi *= 2
	}
	for range 200 {
		m := (lo + hi) / 2
		if loss(m) <= target {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}

// VersionPairLoss returns the exact worst-case privacy loss of two
// published versions of one record (its time sanitized twice), computed
// from the sampled table like ClampedLoss, for integer inputs in
// [0, tmax]. Replay-stable noise makes a repeat (the same input twice)
// publish the same output twice, while a change publishes two independent
// outputs; when the two outputs coincide a reader cannot tell a repeat
// from a change, and the ratio P(o, o | repeat of a) / P(o, o | change to
// b, c) = P(o|a) / (P(o|b) P(o|c)) can exceed the two releases' 2L. The
// loss is the larger of 2·ClampedLoss and that ratio's maximum over the
// outputs o and the inputs a and b != c within W of o. (When the two outputs
// differ the reader knows the record changed: the number of versions and
// whether they differ are not protected; their values are, at this loss.)
func (t *TE) VersionPairLoss(tmax int64) float64 {
	two := 2 * t.ClampedLoss(tmax)
	if tmax <= 0 {
		return two
	}
	w := int64(t.w)
	q := func(d int64) uint64 { return t.q[d+w].Uint64() }
	cum := func(d int64) uint64 { // P(D <= d) * 2^64 for -W <= d < W
		if d < -w {
			return 0
		}
		return t.cum[d+w]
	}
	// p(o, in) is 2^64 P(o | in) for an input within W of o.
	p := func(o, in int64) uint64 {
		switch {
		case o == 0:
			return cum(-in)
		case o == tmax:
			return 0 - cum(tmax-in-1) // P(D >= tmax - in)
		}
		return q(o - in)
	}
	ln2 := math.Log(2)
	best := two
	visit := func(o int64) {
		// the largest probability (the repeat's input) and the two
		// smallest of distinct inputs (a change has b != c)
		mx, m1, m2 := uint64(0), uint64(math.MaxUint64), uint64(math.MaxUint64)
		n := 0
		for in := max(0, o-w); in <= min(tmax, o+w); in++ {
			v := p(o, in)
			if v == 0 && o == tmax && in == tmax {
				v = math.MaxUint64 // P(D >= 0) rounds to 2^64: within 2^-64
			}
			mx = max(mx, v)
			if v < m1 {
				m1, m2 = v, m1
			} else if v < m2 {
				m2 = v
			}
			n++
		}
		if n < 2 {
			return // one input: no change is possible
		}
		// ln( (mx/2^64) / ((m1/2^64)(m2/2^64)) ) = ln mx - ln m1 - ln m2 + 64 ln 2
		l := math.Log(float64(mx)) - math.Log(float64(m1)) - math.Log(float64(m2)) + 64*ln2
		best = math.Max(best, l)
	}
	for o := int64(0); o <= tmax; o++ {
		if o > 2*w+1 && o < tmax-2*w-1 {
			o = tmax - 2*w - 1 // outputs in [W, tmax-W] share one offset range: one stands for all
			visit(w + 1)
		}
		visit(o)
	}
	return best
}
