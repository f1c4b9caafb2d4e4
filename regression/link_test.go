package regression

import (
	"math"
	"math/rand/v2"
	"testing"
)

// linkPoints are linear predictors from every branch of the links: zero
// of both signs, tiny, moderate, log1pExp's and millsLog's cut-offs, the
// range where exp over- or underflows, the infinities.
func linkPoints(rng *rand.Rand) []float64 {
	zs := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 5e-324, 1e-3, -1e-3,
		29.9, -29.9, 30, -30, 30.1, -30.1, 35, -35, 35.5, -35.5, 40, -40,
		700, -700, 710, -710, 746, -746, 800, -800, math.Inf(1), math.Inf(-1)}
	for range 20000 {
		zs = append(zs, 80*rng.Float64()-40, rng.NormFloat64())
	}
	return zs
}

// sameFloat is a == b bit for bit (any NaN equal to any NaN: a NaN's sign
// and payload carry nothing).
func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// TestLinkGHIsPair: gh's derivatives are pair's, bit for bit, for every
// link on every branch; logitPair (one exponential for sigmoid(z) and
// sigmoid(-z)) is the sigmoid form it replaced, bit for bit.
func TestLinkGHIsPair(t *testing.T) {
	t.Parallel()
	// the former logitPair, three sigmoids and log1pExp
	sigmoidForm := func(z float64, y bool) (loss, g, h float64) {
		p := sigmoid(z)
		h = p * sigmoid(-z)
		loss = log1pExp(z)
		g = p
		if y {
			loss -= z
			g = p - 1
			if z < 0 {
				g = -sigmoid(-z)
			}
		}
		return loss, g, h
	}
	for _, z := range append(linkPoints(rand.New(rand.NewPCG(1, 2))), math.NaN()) {
		for _, y := range []bool{false, true} {
			l0, g0, h0 := sigmoidForm(z, y)
			if l, g, h := logitPair(z, y); !sameFloat(l, l0) || !sameFloat(g, g0) || !sameFloat(h, h0) {
				t.Fatalf("logitPair(%v, %v) = %v, %v, %v; sigmoid form %v, %v, %v", z, y, l, g, h, l0, g0, h0)
			}
			for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit, linkCloglogHuber} {
				_, g0, h0 := link.pair(z, y)
				if g, h := link.gh(z, y); !sameFloat(g, g0) || !sameFloat(h, h0) {
					t.Fatalf("%s: gh(%v, %v) = %v, %v; pair's %v, %v", link, z, y, g, h, g0, h0)
				}
			}
		}
	}
}

// TestLogitTerms3MatchesGeneral: recordTerms' e = 3 logit loop
// (logitTerms3) leaves the same bits as its general loop, which runs on the
// same model with a fourth, zero basis column (adding g 0 changes no sum):
// every record, at the start, moderate and extreme points (the latter off
// the product form).
func TestLogitTerms3MatchesGeneral(t *testing.T) {
	t.Parallel()
	m := smallNewtonProblem(t, rand.New(rand.NewPCG(3, 3)), 3000, 60, LinkLogit)
	if m.e != 3 {
		t.Fatalf("e = %d, want the default 3", m.e)
	}
	m4 := *m
	m4.e = 4
	m4.basis = make([]float64, 0, 4*m.q)
	for s := range m.q {
		m4.basis = append(m4.basis, m.basis[3*s:3*s+3]...)
		m4.basis = append(m4.basis, 0)
	}
	an, an4 := make([]float64, m.q), make([]float64, m.q)
	for s := range m.q {
		an[s], an4[s] = sqNorm(m.basis[3*s:3*s+3]), sqNorm(m4.basis[4*s:4*s+4])
	}
	for _, f := range newtonPoints {
		f4 := append(append(append([]float64(nil), f[:3]...), 0), f[3:]...)
		st, st4 := m.newState(), m4.newState()
		m.prepare(st, f[:3])
		m4.prepare(st4, f4[:4])
		rt, rt4 := m.newRecordTerms(), m4.newRecordTerms()
		for i := range m.n {
			m.recordTerms(i, f[3:], st, an, nil, rt)
			m4.recordTerms(i, f4[4:], st4, an4, nil, rt4)
			same := rt.k == rt4.k && sameFloat(rt.gsum, rt4.gsum) && sameFloat(rt.hsum, rt4.hsum) && sameFloat(rt.tr, rt4.tr) &&
				rt4.ga[3] == 0 && rt4.va[3] == 0
			for j := range 3 {
				same = same && sameFloat(rt.ga[j], rt4.ga[j]) && sameFloat(rt.va[j], rt4.va[j])
			}
			for s := 0; s <= rt.k; s++ {
				same = same && sameFloat(rt.gw[s], rt4.gw[s]) && sameFloat(rt.hw[s], rt4.hw[s])
			}
			if !same {
				t.Fatalf("at %v record %d: e = 3 terms %+v, general %+v", f, i, *rt, *rt4)
			}
		}
	}
}
