package privacy

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/sanitizers"
)

// firstAtLeast returns the smallest u with f(u) >= v for a non-decreasing
// f on uint64, or 0 and false when there is none.
func firstAtLeast(f func(uint64) int, v int) (uint64, bool) {
	if f(math.MaxUint64) < v {
		return 0, false
	}
	lo, hi := uint64(0), uint64(math.MaxUint64)
	for lo < hi {
		m := lo + (hi-lo)/2
		if f(m) >= v {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo, true
}

// sampledPMF recovers, from the sampler alone, the exact probability (in
// units of 2^-64) of each value v in [lo, hi] of a map f from one uniform
// 64-bit word that is non-decreasing in the word (an inverse CDF).
func sampledPMF(t *testing.T, f func(uint64) int, lo, hi int) []float64 {
	t.Helper()
	out := make([]float64, hi-lo+1)
	start := uint64(0)
	for v := lo; v <= hi; v++ {
		end, ok := firstAtLeast(f, v+1)
		var mass float64
		if ok {
			mass = float64(end - start)
		} else {
			mass = float64(-start) // 2^64 - start, start > 0
			if start == 0 {
				mass = 0x1p64
			}
		}
		out[v-lo] = mass / 0x1p64
		start = end
	}
	return out
}

func chainFor(t *testing.T, cfg sanitizers.Config) []sanitizers.Guarantee {
	t.Helper()
	c, err := sanitizers.New(cfg, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return c.Guarantees()
}

func baseConfig() sanitizers.Config {
	return sanitizers.Config{
		Key: bytes.Repeat([]byte{7}, 32), Cohorts: []string{"A", "B", "C"},
		TimeMax: 1000, TimeUnit: "days", PseudonymizeID: true,
		Cohort: sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1},
		Public: []string{"event"},
	}
}

func guarantee(t *testing.T, g []sanitizers.Guarantee, field string) sanitizers.Guarantee {
	t.Helper()
	for _, x := range g {
		if x.Field == field {
			return x
		}
	}
	t.Fatalf("no guarantee for %q in %+v", field, g)
	return sanitizers.Guarantee{}
}

// The worst-case loss of the PUBLISHED sanitized time, clamp(t + D, 0,
// time_max), by exact enumeration of its pmf over every input and output of
// the public domain, from the table the sampler actually uses (recovered
// from dp.TE.Sample by bisection, not from the mechanism's own loss code),
// must equal the worst_case_loss the sanitizer states. ε = 0.5, W = 10 (the
// README's example) publishes 5.0 — the clamp merges every t + D <= 0 into
// 0, so P(0|0)/P(0|W) = e^{εW} — not L(ε, W) = 4.5; ε = 2, W = 3 gives 6.0,
// not 5.85.
func TestTEPublishedWorstCaseLoss(t *testing.T) {
	for _, c := range []struct {
		eps, target float64
		w           int
		tmax        float64
		want        float64 // the exact figure, where it has a closed form; 0: none
	}{
		{eps: 0.5, w: 10, tmax: 1000, want: 5.0},
		{eps: 2, w: 3, tmax: 1000, want: 6.0},
		{eps: 0.1, w: 10, tmax: 1000, want: -math.Log(math.Expm1(0.1))}, // L(ε,W) dominates
		{eps: 1, w: 5, tmax: 7},                                         // no output sees every offset
		{eps: 0.7, w: 4, tmax: 3},                                       // domain shorter than the window
		{target: 5, w: 10, tmax: 1000, want: 5},
		{target: 3, w: 5, tmax: 1000, want: 3},
	} {
		name := fmt.Sprintf("eps=%v,target=%v,W=%d,tmax=%v", c.eps, c.target, c.w, c.tmax)
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.TimeMax = c.tmax
			cfg.Time = sanitizers.TimeConfig{Mechanism: "te", Epsilon: c.eps, TargetLoss: c.target, Window: c.w}
			g := guarantee(t, chainFor(t, cfg), "time")
			eps := *g.Epsilon
			te, err := dp.NewTE(eps, c.w)
			if err != nil {
				t.Fatal(err)
			}
			pmf := sampledPMF(t, te.Sample, -c.w, c.w)
			tmax := int64(c.tmax)
			// Enumerate the published output pmf.
			P := make([][]float64, tmax+1)
			for in := range P {
				P[in] = make([]float64, tmax+1)
				for d := -c.w; d <= c.w; d++ {
					P[in][min(max(int64(in)+int64(d), 0), tmax)] += pmf[d+c.w]
				}
			}
			worst := 0.0
			w := int64(c.w)
			for o := int64(0); o <= tmax; o++ {
				for a := max(0, o-w); a <= min(tmax, o+w); a++ {
					for b := max(0, o-w); b <= min(tmax, o+w); b++ {
						worst = math.Max(worst, math.Log(P[a][o]/P[b][o]))
					}
				}
			}
			if stated := *g.WorstCaseLoss; math.Abs(stated-worst) > 1e-9 {
				t.Fatalf("stated worst_case_loss %.12f, exact loss of the published value %.12f", stated, worst)
			}
			if c.want != 0 && math.Abs(worst-c.want) > 1e-6 {
				t.Fatalf("exact loss %.9f, want %.9f", worst, c.want)
			}
			if c.target != 0 && worst > c.target+1e-9 {
				t.Fatalf("target_loss %v gave a published loss %.9f", c.target, worst)
			}
		})
	}
}

// RRR: the exact probability of every reported label for every true label,
// recovered from dp.RRR.Sample by bisection (the map from the uniform word
// to the label's rank — the other labels in order, then the true one — is
// non-decreasing), and the worst-case ratio over all pairs of true labels
// must not exceed e^ε for the ε the sanitizer states, and must reach it
// within 1e-9.
func TestRRRPublishedWorstCaseRatio(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		for _, eps := range []float64{0.5, 1, 2, 4} {
			t.Run(fmt.Sprintf("n=%d,eps=%v", n, eps), func(t *testing.T) {
				cfg := baseConfig()
				cfg.Cohorts = []string{"A", "B", "C", "D", "E"}[:n]
				cfg.Cohort.Epsilon = eps
				g := guarantee(t, chainFor(t, cfg), "cohort")
				r, err := dp.NewRRR(eps, n)
				if err != nil {
					t.Fatal(err)
				}
				P := make([][]float64, n) // P[true][reported]
				for c := range n {
					rank := func(u uint64) int {
						o := r.Sample(c, u)
						switch {
						case o == c:
							return n - 1
						case o > c:
							return o - 1
						}
						return o
					}
					pr := sampledPMF(t, rank, 0, n-1)
					P[c] = make([]float64, n)
					for k, p := range pr {
						o := k
						switch {
						case k == n-1:
							o = c
						case k >= c:
							o = k + 1
						}
						P[c][o] = p
					}
				}
				worst := 0.0
				for o := range n {
					for a := range n {
						for b := range n {
							worst = math.Max(worst, math.Log(P[a][o]/P[b][o]))
						}
					}
				}
				if stated := *g.Epsilon; worst > stated+1e-12 || worst < stated-1e-9 {
					t.Fatalf("stated epsilon %.12f, exact worst-case loss %.12f", stated, worst)
				}
				if *g.WorstCaseLoss != *g.Epsilon {
					t.Fatalf("worst_case_loss %v differs from epsilon %v", *g.WorstCaseLoss, *g.Epsilon)
				}
			})
		}
	}
}
