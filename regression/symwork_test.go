package regression

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// randomSym is a d x d symmetric matrix with eigenvalues spread over
// cond orders of magnitude (negative ones when indefinite), rotated by a
// random orthogonal matrix.
func randomSym(rng *rand.Rand, d int, cond float64, indefinite bool) *mat.SymDense {
	g := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			g.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	s := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for c := a; c < d; c++ {
			var v float64
			for k := 0; k < d; k++ {
				l := math.Pow(cond, -float64(k)/float64(max(d-1, 1)))
				if indefinite && k%2 == 1 {
					l = -l
				}
				v += q.At(a, k) * l * q.At(c, k)
			}
			s.SetSym(a, c, v)
		}
	}
	return s
}

// TestSymWorkMatchesGonum: symWork's eigen-decomposition, Cholesky factor
// and solve give mat.EigenSym's and mat.Cholesky's numbers to the bit
// (not merely within a tolerance: the bootstrap's fixed-seed limits, and
// the goldens that hold them, must not move), on matrices of the
// bootstrap's sizes from well- to badly conditioned, and both say "not
// positive definite" on the same indefinite ones.
func TestSymWorkMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{1, 2, 3, 5, 8, 11, 22} {
		w := newSymWork(d)
		for _, cond := range []float64{1, 1e3, 1e8, 1e14} {
			for _, indefinite := range []bool{false, true} {
				name := fmt.Sprintf("d=%d cond=%g indefinite=%v", d, cond, indefinite)
				s := randomSym(rng, d, cond, indefinite)
				var eig mat.EigenSym
				if ok := eig.Factorize(s, true); ok != w.eigen(s) {
					t.Fatalf("%s: eigen ok %v, symWork %v", name, ok, !ok)
				}
				var q mat.Dense
				eig.VectorsTo(&q)
				for k, v := range eig.Values(nil) {
					if w.vals[k] != v {
						t.Fatalf("%s: eigenvalue %d = %v, gonum %v", name, k, w.vals[k], v)
					}
					for i := 0; i < d; i++ {
						if w.vec(i, k) != q.At(i, k) {
							t.Fatalf("%s: eigenvector %d entry %d = %v, gonum %v", name, k, i, w.vec(i, k), q.At(i, k))
						}
					}
				}
				for _, ridge := range []float64{0, 0.25} {
					hr := mat.NewSymDense(d, nil)
					hr.CopySym(s)
					for j := 0; j < d; j++ {
						hr.SetSym(j, j, hr.At(j, j)+ridge)
					}
					var chol mat.Cholesky
					ok := chol.Factorize(hr)
					if ok != w.cholesky(s, ridge) {
						t.Fatalf("%s ridge %v: cholesky ok %v, symWork %v", name, ridge, ok, !ok)
					}
					if !ok {
						continue
					}
					b := make([]float64, d)
					for j := range b {
						b[j] = rng.NormFloat64()
					}
					var x mat.VecDense
					_ = chol.SolveVecTo(&x, mat.NewVecDense(d, append([]float64(nil), b...))) // a Condition error still solves
					w.solve(b)
					for j := range b {
						if b[j] != x.AtVec(j) {
							t.Fatalf("%s ridge %v: solve entry %d = %v, gonum %v", name, ridge, j, b[j], x.AtVec(j))
						}
					}
				}
			}
		}
	}
}

// BenchmarkBootstrapLinalg: the linear algebra of one bootstrap simulation
// (two eigen-decompositions, two Cholesky factors and solves of a d x d
// matrix) with gonum's mat types and with symWork, in one run for the
// ratio.
func BenchmarkBootstrapLinalg(b *testing.B) {
	for _, d := range []int{4, 22} {
		s := randomSym(rand.New(rand.NewPCG(3, 4)), d, 1e3, false)
		f := make([]float64, d)
		for j := range f {
			f[j] = float64(j + 1)
		}
		b.Run(fmt.Sprintf("mat/d=%d", d), func(b *testing.B) {
			for b.Loop() {
				for range 2 {
					var eig mat.EigenSym
					eig.Factorize(s, true)
					var q mat.Dense
					eig.VectorsTo(&q)
					_ = eig.Values(nil)
					var chol mat.Cholesky
					chol.Factorize(s)
					var x mat.VecDense
					_ = chol.SolveVecTo(&x, mat.NewVecDense(d, append([]float64(nil), f...)))
				}
			}
		})
		b.Run(fmt.Sprintf("symWork/d=%d", d), func(b *testing.B) {
			w := newSymWork(d)
			x := make([]float64, d)
			for b.Loop() {
				for range 2 {
					w.eigen(s)
					w.cholesky(s, 0)
					copy(x, f)
					w.solve(x)
				}
			}
		})
	}
}
