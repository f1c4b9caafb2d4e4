package km

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// Privacy suite (issue 11): the worst-case privacy loss of the noisy node
// counts the hierarchical KM actually draws — every node of every tree
// (events and censorings of each cohort) with two-sided geometric noise of
// the scale passed to dp.DiscreteLaplace — enumerated over every pair of
// neighbouring histograms under the relation the release states, must
// equal the epsilon it states. With exact discrete Laplace noise of scale
// s_v on node v, the largest log-ratio over all outputs between neighbours
// whose node vectors differ by Δ is exactly sum_v |Δ_v| / s_v; the node
// vectors come from the release's own tree (binTree.counts). The inferred
// bins, curves and tests are post-processing.
func TestHierarchicalKMWorstCaseLoss(t *testing.T) {
	for _, c := range []struct {
		bins, cohorts int
		eps           float64
	}{{17, 2, 1}, {40, 2, 0.5}, {150, 1, 2}, {5, 3, 1}} {
		t.Run(fmt.Sprintf("bins=%d,cohorts=%d,eps=%v", c.bins, c.cohorts, c.eps), func(t *testing.T) {
			h, err := NewHistogram(1, float64(c.bins-1), c.cohorts)
			if err != nil {
				t.Fatal(err)
			}
			if h.Bins != c.bins {
				t.Fatalf("%d bins", h.Bins)
			}
			for k := range c.cohorts {
				for b := range c.bins {
					h.Events[k][b], h.Censor[k][b] = 3, 2
				}
			}
			res, err := HierarchicalKM(h, dp.NewSeededSource(1), KMOptions{Epsilon: c.eps})
			if err != nil {
				t.Fatal(err)
			}
			ht := hierTreesFor(t, c.bins, c.eps)
			tr := ht.tree
			// path[b][v] = 1 if node v counts leaf b.
			unit := func(b int) []int64 {
				leaves := make([]int64, c.bins)
				leaves[b] = 1
				nodes := make([]int64, tr.nodes)
				tr.counts(leaves, nodes)
				return nodes
			}
			level := make([]int, tr.nodes)
			for l := range tr.size {
				for i := 0; i < tr.size[l]; i++ {
					level[tr.off[l]+i] = l
				}
			}
			paths := make([][]int64, c.bins)
			for b := range paths {
				paths[b] = unit(b)
			}
			// A cell is (cohort, kind, bin); each (cohort, kind) has its
			// own tree. loss(a, b) for replacing a record in cell a by one
			// in cell b.
			type cell struct{ tree, bin int }
			var cells []cell
			for tree := range 2 * c.cohorts {
				for b := range c.bins {
					cells = append(cells, cell{tree, b})
				}
			}
			lossOf := func(a, b cell) float64 {
				s := 0.0
				if a.tree != b.tree {
					for v := range tr.nodes {
						s += float64(paths[a.bin][v]+paths[b.bin][v]) / ht.scales[level[v]]
					}
					return s
				}
				for v := range tr.nodes {
					s += math.Abs(float64(paths[a.bin][v]-paths[b.bin][v])) / ht.scales[level[v]]
				}
				return s
			}
			worst := 0.0
			switch {
			case strings.HasPrefix(res.Neighbouring, "replace-one"):
				for _, a := range cells {
					for _, b := range cells {
						worst = math.Max(worst, lossOf(a, b))
					}
				}
			case strings.HasPrefix(res.Neighbouring, "add/remove"):
				for _, a := range cells {
					s := 0.0
					for v := range tr.nodes {
						s += float64(paths[a.bin][v]) / ht.scales[level[v]]
					}
					worst = math.Max(worst, s)
				}
			default:
				t.Fatalf("relation %q: this test does not know it; teach it", res.Neighbouring)
			}
			// dp.DiscreteLaplace rounds each scale up to a multiple of
			// 2^-30 (more noise): the realised loss is at most worst.
			if worst > res.Epsilon*(1+1e-12) || worst < res.Epsilon*(1-1e-9) {
				t.Fatalf("exact worst-case loss of the noisy nodes %.12f under %q, release states epsilon %v", worst, res.Neighbouring, res.Epsilon)
			}
		})
	}
}

// The flat noisy-histogram KM: every (cohort, bin) event and censoring cell
// gets noise of the scale its mechanism states; a neighbour under the
// stated relation changes the cells by the L1 amount enumerated here, and
// L1 / scale must be the epsilon the release states.
func TestNoisyHistogramKMWorstCaseLoss(t *testing.T) {
	for _, eps := range []float64{0.5, 1, 3} {
		h, err := NewHistogram(1, 9, 2)
		if err != nil {
			t.Fatal(err)
		}
		res, err := NoisyHistogramKM(h, dp.NewSeededSource(2), KMOptions{Epsilon: eps})
		if err != nil {
			t.Fatal(err)
		}
		// The scale the release states it passes to dp.DiscreteLaplace.
		m := regexp.MustCompile(`scale [0-9]+/epsilon = ([0-9.eE+-]+)`).FindStringSubmatch(res.Mechanism)
		if m == nil {
			t.Fatalf("mechanism %q does not state its scale", res.Mechanism)
		}
		scale, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		var l1 float64
		switch {
		case strings.HasPrefix(res.Neighbouring, "replace-one"):
			l1 = 2 // one cell -1, another +1
		case strings.HasPrefix(res.Neighbouring, "add/remove"):
			l1 = 1
		default:
			t.Fatalf("relation %q unknown to this test", res.Neighbouring)
		}
		if worst := l1 / scale; math.Abs(worst-res.Epsilon) > 1e-12 {
			t.Fatalf("eps=%v: worst-case loss %v under %q, release states %v", eps, worst, res.Neighbouring, res.Epsilon)
		}
	}
}
