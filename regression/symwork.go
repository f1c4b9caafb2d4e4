package regression

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// symWork is the reusable workspace of the small symmetric linear algebra
// the bootstrap repeats thousands of times per release: an eigen-
// decomposition and a Cholesky factor and solve of a d x d matrix. It calls
// the LAPACK routines mat.EigenSym and mat.Cholesky call (Syev with the
// workspace size Syev asks for; Potrf, Potrs), on the same data, so its
// numbers are theirs to the bit (TestSymWorkMatchesGonum), without their
// per-call allocations and without mat.Cholesky's condition-number
// estimate (Lansy and Pocon, most of the factor's cost). Nothing here
// reads that estimate: every matrix factored has its eigenvalues floored
// at a positive floor of the size of its noise (projectPD, plus the
// ridge), so its condition number is bounded far below the 1e16 at which
// mat.Cholesky's solve would report one.
type symWork struct {
	d    int
	a    []float64 // d x d, row-major: the matrix, then the eigenvectors (columns)
	vals []float64 // eigenvalues, ascending
	work []float64 // Syev's workspace
	chol []float64 // d x d upper Cholesky factor
}

func newSymWork(d int) *symWork {
	w := &symWork{d: d, a: make([]float64, d*d), vals: make([]float64, d), chol: make([]float64, d*d)}
	query := []float64{0}
	lapack64.Syev(lapack.EVCompute, w.sym(w.a), w.vals, query, -1)
	w.work = make([]float64, int(query[0]))
	return w
}

func (w *symWork) sym(data []float64) blas64.Symmetric {
	return blas64.Symmetric{Uplo: blas.Upper, N: w.d, Stride: w.d, Data: data}
}

// copyUpper copies s's upper triangle into dst (row-major, stride d), as
// mat.SymDense.CopySym does; the rest of dst is zeroed.
func (w *symWork) copyUpper(dst []float64, s *mat.SymDense) {
	raw := s.RawSymmetric()
	d := w.d
	clear(dst)
	for i := 0; i < d; i++ {
		copy(dst[i*d+i:i*d+d], raw.Data[i*raw.Stride+i:i*raw.Stride+d])
	}
}

// eigen decomposes s (as mat.EigenSym.Factorize(s, true)): afterwards
// w.vals holds the eigenvalues in ascending order and w.vec(i, k) the i-th
// entry of the k-th eigenvector. ok is false if the decomposition failed.
func (w *symWork) eigen(s *mat.SymDense) bool {
	w.copyUpper(w.a, s)
	return lapack64.Syev(lapack.EVCompute, w.sym(w.a), w.vals, w.work, len(w.work))
}

// vec is entry i of eigenvector k after eigen.
func (w *symWork) vec(i, k int) float64 { return w.a[i*w.d+k] }

// cholesky factors s + ridge*I (as mat.Cholesky.Factorize of that matrix);
// ok is false if it is not positive definite.
func (w *symWork) cholesky(s *mat.SymDense, ridge float64) bool {
	w.copyUpper(w.chol, s)
	if ridge != 0 {
		for j := 0; j < w.d; j++ {
			w.chol[j*w.d+j] += ridge
		}
	}
	_, ok := lapack64.Potrf(w.sym(w.chol))
	return ok
}

// solve overwrites x with A^-1 x for the A factored by cholesky (as
// mat.Cholesky.SolveVecTo).
func (w *symWork) solve(x []float64) {
	lapack64.Potrs(blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: w.d, Stride: w.d, Data: w.chol},
		blas64.General{Rows: w.d, Cols: 1, Stride: 1, Data: x})
}

// projectPD returns the matrix with the eigenvalues of s floored at floor
// (see projectPD).
func (w *symWork) projectPD(s *mat.SymDense, floor float64) (*mat.SymDense, bool) {
	if !w.eigen(s) {
		return nil, false
	}
	d := w.d
	out := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for c := a; c < d; c++ {
			var v float64
			for k, l := range w.vals {
				v += w.vec(a, k) * math.Max(l, floor) * w.vec(c, k)
			}
			out.SetSym(a, c, v)
		}
	}
	return out, true
}

// debias returns (I + r h^-1) f (see debias), nil if h is not positive
// definite.
func (w *symWork) debias(h *mat.SymDense, r float64, f []float64) []float64 {
	if !w.cholesky(h, 0) {
		return nil
	}
	x := append([]float64(nil), f...)
	w.solve(x)
	out := make([]float64, len(f))
	for j, v := range f {
		out[j] = v + r*x[j]
	}
	return out
}
