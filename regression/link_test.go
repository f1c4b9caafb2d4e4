package regression

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The sigmoid and log1pExp forms logitPair computes with one exponential
// (the references of TestLinkGHIsPair; sigmoid also draws helpers_test's
// synthetic data).

// log1pExp returns log(1 + exp(z)) without overflow.
func log1pExp(z float64) float64 {
	if z > 35 {
		return z + math.Exp(-z)
	}
	if z < -35 {
		return math.Exp(z)
	}
	return math.Log1p(math.Exp(z))
}

// sigmoid returns 1 / (1 + exp(-z)) without overflow.
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

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
