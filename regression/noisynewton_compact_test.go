package regression

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNewtonCompactSums: the clipped sums over the distinct records, each
// counted its number of times, equal the per-period definition over the
// records (few-valued covariates, so records repeat), at ordinary and
// extreme points and every link; with continuous covariates newtonCompact
// declines (no repeats to gain from).
func TestNewtonCompactSums(t *testing.T) {
	t.Parallel()
	const q, n = 20, 6000
	rng := rand.New(rand.NewPCG(21, 5))
	o, _ := NewtonOptions{}.resolve(q)
	cl := o.clips()
	// 10 patterns (counted densely per cell) and 1,000 (more cells than
	// records: sorted by pattern first)
	for _, grid := range [][2]int{{5, 2}, {50, 20}} {
		for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
			d := Data{Time: make([]float64, n), Event: make([]bool, n), X: make([][]float64, n)}
			for i := range n {
				d.Time[i] = float64(1+rng.IntN(q)) / q
				d.Event[i] = rng.IntN(3) == 0
				d.X[i] = []float64{(float64(rng.IntN(grid[0]))/float64(grid[0]) - 0.5) * 1.2, (float64(rng.IntN(grid[1]))/float64(grid[1]) - 0.5) * 1.2}
			}
			pr, err := prepareDiscrete(d, &DiscreteOptions{Method: MethodNewton, Link: link, TimeMax: 1, Intervals: q})
			if err != nil {
				t.Fatal(err)
			}
			m := pr.m
			recs := m.newtonCompact()
			mc, w := recs.m, recs.w
			if np := grid[0] * grid[1]; w == nil || mc.n > min(n, np*2*q) || len(recs.pstart) > np+1 || len(recs.pstart) < np*9/10 {
				t.Fatalf("%s: compact to %d distinct records of %d (weights %v), %d patterns", link, mc.n, m.n, w != nil, len(recs.pstart)-1)
			}
			var total float64
			for _, c := range w {
				total += c
			}
			if total != n {
				t.Fatalf("%s: counts sum to %v, want %d", link, total, n)
			}
			for _, f := range newtonPoints {
				want := naiveClippedSums(m, f, cl)
				for name, got := range map[string]newtonSums{"distinct": mc.clippedSumsW(f, cl, w), "patterns": recs.clippedSums(f, cl)} {
					for b := range nBlocks {
						for j := range want[b] {
							if math.Abs(got[b][j]-want[b][j]) > 1e-9*(1+math.Abs(want[b][j])) {
								t.Errorf("%s %s at %v: block %d[%d] = %v, per-period %v", name, link, f, b, j, got[b][j], want[b][j])
							}
						}
					}
				}
			}
		}
	}
	m := smallNewtonProblem(t, rng, 3000, q, LinkLogit)
	if recs := m.newtonCompact(); recs.w != nil || recs.m != m || recs.pstart != nil {
		t.Errorf("continuous covariates: compacted to %d records", recs.m.n)
	}
}
