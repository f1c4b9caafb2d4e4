package km

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The interval simulations' S-only curves (KMOptions.survOnly) are the S
// of the full post-processing, bit for bit, on signed cells of every kind
// (negative, empty tails, truncation) under both noise models, and keep
// its N and truncation point.
func TestSurvOnlyCurveMatchesFullCurve(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 23))
	for trial := 0; trial < 400; trial++ {
		bins := 1 + rng.IntN(200)
		eps := []float64{0.1, 0.5, 2, 8}[trial%4]
		o, err := KMOptions{Epsilon: eps}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		o.noIntervals = true
		if trial%5 == 0 {
			o.MaxNoiseStdErr = math.Inf(1)
		}
		ev, ce := make([]float64, bins), make([]float64, bins)
		size := float64(1 + rng.IntN(40))
		for b := range ev {
			ev[b] = math.Round(size*rng.Float64() + rng.NormFloat64()*3/eps)
			ce[b] = math.Round(size*rng.Float64() + rng.NormFloat64()*3/eps)
		}
		ht, err := newHierTrees(bins, defaultHierConfig, eps)
		if err != nil {
			t.Fatal(err)
		}
		models := map[string]func() logSNoise{
			"cells": func() logSNoise { return &cellNoise{eventVar: func(int) float64 { return 2 / (eps * eps) }} },
			"tree":  func() logSNoise { return newPrefixNoise(ht.tree, 1) },
		}
		for name, noise := range models {
			full, err := kmFromSignedCellsNoise(ev, ce, noise(), 30, o)
			if err != nil {
				t.Fatal(err)
			}
			so := o
			so.survOnly = true
			fast, err := kmFromSignedCellsNoise(ev, ce, noise(), 30, so)
			if err != nil {
				t.Fatal(err)
			}
			if len(fast.Curve.Surv) != len(full.Curve.Surv) {
				t.Fatalf("trial %d (%s): %d S rows, want %d", trial, name, len(fast.Curve.Surv), len(full.Curve.Surv))
			}
			for i, s := range full.Curve.Surv {
				if math.Float64bits(fast.Curve.Surv[i]) != math.Float64bits(s) {
					t.Fatalf("trial %d (%s): S[%d] = %v, want %v", trial, name, i, fast.Curve.Surv[i], s)
				}
			}
			if math.Float64bits(fast.N) != math.Float64bits(full.N) ||
				math.Float64bits(fast.TruncatedAt) != math.Float64bits(full.TruncatedAt) {
				t.Fatalf("trial %d (%s): N %v truncated at %v, want %v and %v", trial, name, fast.N, fast.TruncatedAt, full.N, full.TruncatedAt)
			}
		}
	}
}

// fmax is math.Max, bit for bit, on the special values and ordinary ones.
func TestFmaxIsMathMax(t *testing.T) {
	vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 2.5, math.MaxFloat64, math.SmallestNonzeroFloat64}
	for _, x := range vals {
		for _, y := range vals {
			if got, want := fmax(x, y), math.Max(x, y); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("fmax(%v, %v) = %v, want %v", x, y, got, want)
			}
		}
	}
}
