package dp

import (
	"fmt"
	"math"
	"math/big"
)

// RRRVersion is the mechanism version mixed into the PRF input of RRR draws.
const RRRVersion uint16 = 1

// RRR is revised randomized response over n public labels (paper 004 §4,
// corrected in mechanisms.md §2): with probability p report the true label,
// otherwise a label uniform over all n. Configured by epsilon, with
// p = (e^eps - 1)/(e^eps - 1 + n), so the worst-case ratio
// (p + (1-p)/n) / ((1-p)/n) equals e^eps.
//
// Sampling is exact over a fixed-point table: each other label has
// probability Q/2^64 with Q = ceil(2^64 (1-p)/n) (rounded up, so the realised
// ratio never exceeds e^eps), the true label the rest. Epsilon reports the
// exact loss of that table.
type RRR struct {
	n       int
	nominal float64
	p       float64
	qOther  uint64 // per other label, in units of 2^-64
	exact   float64
}

// NewRRR builds the mechanism for n >= 2 labels at epsilon > 0.
func NewRRR(epsilon float64, n int) (*RRR, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return nil, fmt.Errorf("rrr: epsilon must be positive and finite, got %v", epsilon)
	}
	if n < 2 {
		return nil, fmt.Errorf("rrr: need at least 2 labels, got %d", n)
	}
	if epsilon > 40 {
		return nil, fmt.Errorf("rrr: epsilon %v too large to sample exactly (max 40)", epsilon)
	}
	em1 := math.Expm1(epsilon)
	p := em1 / (em1 + float64(n))
	other := (1 - p) / float64(n) // = 1/(e^eps - 1 + n)
	f := new(big.Float).SetPrec(256).SetFloat64(other)
	f.Mul(f, new(big.Float).SetPrec(256).SetMantExp(big.NewFloat(1), 64))
	qi, acc := f.Int(nil)
	if acc == big.Below {
		qi.Add(qi, big.NewInt(1))
	}
	if !qi.IsUint64() || qi.Sign() == 0 {
		return nil, fmt.Errorf("rrr: internal table error")
	}
	q := qi.Uint64()
	r := &RRR{n: n, nominal: epsilon, p: p, qOther: q}
	// exact loss: (2^64 - (n-1) Q) / Q
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	top := new(big.Int).Sub(two64, new(big.Int).Mul(big.NewInt(int64(n-1)), qi))
	ratio, _ := new(big.Rat).SetFrac(top, qi).Float64()
	r.exact = math.Log(ratio)
	return r, nil
}

// P returns the probability of reporting the true label through the coin.
func (r *RRR) P() float64 { return r.p }

// Labels returns n.
func (r *RRR) Labels() int { return r.n }

// Epsilon returns the exact worst-case loss of the sampled table (at most the
// configured epsilon, equal to it within 1e-12).
func (r *RRR) Epsilon() float64 { return r.exact }

// Nominal returns the configured epsilon.
func (r *RRR) Nominal() float64 { return r.nominal }

// ReportProb returns the exact probability of reporting label out given
// true label in.
func (r *RRR) ReportProb(in, out int) float64 {
	q, _ := new(big.Rat).SetFrac(new(big.Int).SetUint64(r.qOther), new(big.Int).Lsh(big.NewInt(1), 64)).Float64()
	if in == out {
		return 1 - float64(r.n-1)*q
	}
	return q
}

// Sample maps one uniform 64-bit word to the reported label for true label
// c in [0, n).
func (r *RRR) Sample(c int, u uint64) int {
	// u < (n-1) Q: one of the other labels, uniformly; else the true one.
	k := u / r.qOther
	if k >= uint64(r.n-1) {
		return c
	}
	o := int(k)
	if o >= c {
		o++
	}
	return o
}

// RRRPaperEpsilon is the published (wrong) formula of paper 004, kept only to
// document the erratum in tests: it understates the loss by ln(n-1).
func RRRPaperEpsilon(n int, p float64) float64 {
	fn := float64(n)
	return math.Log((fn*p + 1 - p) / (fn - 1 - fn*p + p))
}

// VersionPairLoss returns the exact worst-case loss of two published
// versions of one record's label (see TE.VersionPairLoss): the larger of
// 2·Epsilon and, for equal reports y, ln(P(y|a) / (P(y|b) P(y|c))) at its
// maximum over a and b != c: a = y, and b, c the two least likely distinct
// inputs (two other labels when n >= 3; y and the other when n = 2).
func (r *RRR) VersionPairLoss() float64 {
	q := float64(r.qOther)
	hi := float64(math.MaxUint64 - uint64(r.n-1)*r.qOther + 1)
	m2 := q // second smallest among distinct inputs
	if r.n == 2 {
		m2 = hi
	}
	l := math.Log(hi) - math.Log(q) - math.Log(m2) + 64*math.Log(2)
	return math.Max(2*r.exact, l)
}
