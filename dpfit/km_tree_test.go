package dpfit

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"gonum.org/v1/gonum/mat"
)

// denseTreeGLS returns the generalised least-squares leaf estimates
// (H' W H)^-1 H' W y and the matrix (H' W H)^-1 (W = diag(1/nodeVar)) by a
// dense solve: the reference for binTree.infer and prefixNoise.
func denseTreeGLS(t *testing.T, tr *binTree, y []float64) ([]float64, *mat.Dense) {
	t.Helper()
	B := tr.size[0]
	H := mat.NewDense(tr.nodes, B, nil)
	W := make([]float64, tr.nodes)
	for l := range tr.size {
		for i := 0; i < tr.size[l]; i++ {
			W[tr.off[l]+i] = 1 / tr.nodeVar[l]
		}
	}
	// leaves of node v: recurse down
	var mark func(l, i, v int)
	mark = func(l, i, v int) {
		if l == 0 {
			H.Set(v, i, 1)
			return
		}
		lo, hi := tr.children(l, i)
		for c := lo; c < hi; c++ {
			mark(l-1, c-tr.off[l-1], v)
		}
	}
	for l := range tr.size {
		for i := 0; i < tr.size[l]; i++ {
			mark(l, i, tr.off[l]+i)
		}
	}
	var HtW mat.Dense
	HtW.CloneFrom(H.T())
	for r := 0; r < B; r++ {
		for c := 0; c < tr.nodes; c++ {
			HtW.Set(r, c, HtW.At(r, c)*W[c])
		}
	}
	var N mat.Dense
	N.Mul(&HtW, H)
	var Ninv mat.Dense
	if err := Ninv.Inverse(&N); err != nil {
		t.Fatal(err)
	}
	var rhs mat.VecDense
	rhs.MulVec(&HtW, mat.NewVecDense(tr.nodes, append([]float64(nil), y...)))
	var x mat.VecDense
	x.MulVec(&Ninv, &rhs)
	out := make([]float64, B)
	for i := range out {
		out[i] = x.AtVec(i)
	}
	return out, &Ninv
}

// The linear-time inference equals the dense least-squares solution, and
// prefixNoise's incremental variances equal w' (H'WH)^-1 w for the prefix
// weights, on complete and incomplete trees with equal and unequal level
// variances.
func TestBinTreeInferMatchesDenseGLS(t *testing.T) {
	tests := []struct {
		bins, branch int
		levelVar     func(L int) []float64
	}{
		{1, 2, nil}, {2, 2, nil}, {8, 2, nil}, {13, 2, nil}, {27, 3, nil}, {40, 4, nil}, {37, 16, nil}, {5, 8, nil},
		{29, 3, func(L int) []float64 {
			v := make([]float64, L)
			for l := range v {
				v[l] = float64(1 + 3*l)
			}
			return v
		}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("bins=%d,b=%d,unequal=%v", tc.bins, tc.branch, tc.levelVar != nil), func(t *testing.T) {
			var lv []float64
			if tc.levelVar != nil {
				probe, err := newBinTree(tc.bins, tc.branch, nil)
				if err != nil {
					t.Fatal(err)
				}
				lv = tc.levelVar(probe.levels())
			}
			tr, err := newBinTree(tc.bins, tc.branch, lv)
			if err != nil {
				t.Fatal(err)
			}
			src := dp.NewSeededSource(uint64(tc.bins*100 + tc.branch))
			y := make([]float64, tr.nodes)
			for i := range y {
				y[i] = float64(dp.Uint64n(src, 100))
			}
			want, Ninv := denseTreeGLS(t, tr, y)
			got := append([]float64(nil), y...)
			tr.infer(got, make([]float64, tr.nodes))
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-8*math.Max(1, math.Abs(want[i])) {
					t.Fatalf("leaf %d: %v, want %v", i, got[i], want[i])
				}
			}
			// consistency: every node is the sum of its children
			for l := 1; l < tr.levels(); l++ {
				for i := 0; i < tr.size[l]; i++ {
					lo, hi := tr.children(l, i)
					s := 0.0
					for c := lo; c < hi; c++ {
						s += got[c]
					}
					if v := got[tr.off[l]+i]; math.Abs(v-s) > 1e-8*math.Max(1, math.Abs(s)) {
						t.Fatalf("node %d of level %d = %v, children sum %v", i, l, v, s)
					}
				}
			}
			// variances of the prefix functionals with weights 1/m
			pn := newPrefixNoise(tr, 1)
			wv := make([]float64, tc.bins)
			for b := 0; b < tc.bins; b++ {
				m := float64(200 - 3*b)
				wv[b] = 1 / m
				cum, own := pn.add(b, m)
				var q, qq float64
				for i := 0; i <= b; i++ {
					for j := 0; j <= b; j++ {
						q += wv[i] * Ninv.At(i, j) * wv[j]
					}
				}
				qq = Ninv.At(b, b) * wv[b] * wv[b]
				if math.Abs(cum-q) > 1e-9*math.Max(1e-6, q) || math.Abs(own-qq) > 1e-9*math.Max(1e-6, qq) {
					t.Fatalf("bin %d: variance %v / own %v, dense %v / %v", b, cum, own, q, qq)
				}
			}
		})
	}
}
