package projection

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dpsurv/dpsurv/dp"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// Guarantee is the label every HPPCox release carries.
const Guarantee = "none (heuristic)"

// Defaults of the optimal projection.
const (
	DefaultTriplets = 100 // triplets sampled per site
	DefaultL1       = 0.1 // lambda, the LP's sparsity weight (the xi sum grows with the triplet count)
)

// Projection is a d x m matrix B applied as z = B'x.
type Projection struct {
	d, m     int
	b        []float64 // d*m row-major
	kept     []int
	warnings []string
}

// Dims returns d and m.
func (p *Projection) Dims() (d, m int) { return p.d, p.m }

// Matrix returns a copy of B as rows.
func (p *Projection) Matrix() [][]float64 {
	out := make([][]float64, p.d)
	for l := range out {
		out[l] = append([]float64(nil), p.b[l*p.m:(l+1)*p.m]...)
	}
	return out
}

// Kept lists the input features with a non-zero row of B.
func (p *Projection) Kept() []int { return append([]int(nil), p.kept...) }

// Warnings lists conditions under which the projection hides little (for
// example m equal to the number of kept features: B is then invertible on
// them).
func (p *Projection) Warnings() []string { return append([]string(nil), p.warnings...) }

// Apply returns z = B'x. x must have length d.
func (p *Projection) Apply(x []float64) []float64 {
	z := make([]float64, p.m)
	for l, xv := range x[:p.d] {
		if xv == 0 {
			continue
		}
		row := p.b[l*p.m : (l+1)*p.m]
		for c, b := range row {
			z[c] += b * xv
		}
	}
	return z
}

func checkDims(d, m int) error {
	if d < 1 {
		return fmt.Errorf("input dimension must be >= 1, got %d", d)
	}
	if m < 1 || m > d {
		return fmt.Errorf("projected dimension must be in [1, %d], got %d", d, m)
	}
	return nil
}

// Random returns a Gaussian random projection: B has independent N(0, 1/m)
// entries drawn from src.
func Random(d, m int, src dp.Source) (*Projection, error) {
	if err := checkDims(d, m); err != nil {
		return nil, fmt.Errorf("random projection: %w", err)
	}
	if src == nil {
		return nil, errors.New("random projection: nil source")
	}
	p := &Projection{d: d, m: m, b: make([]float64, d*m)}
	sd := 1 / math.Sqrt(float64(m))
	for j := 0; j < len(p.b); j += 2 {
		a, b := gaussianPair(src)
		p.b[j] = a * sd
		if j+1 < len(p.b) {
			p.b[j+1] = b * sd
		}
	}
	for l := 0; l < d; l++ {
		p.kept = append(p.kept, l)
	}
	if m == d {
		p.warnings = append(p.warnings, "m equals d: a square random projection is invertible and hides nothing")
	}
	return p, nil
}

// gaussianPair returns two independent standard normals (Marsaglia polar).
func gaussianPair(src dp.Source) (float64, float64) {
	for {
		u := 2*dp.Float64(src) - 1
		v := 2*dp.Float64(src) - 1
		s := u*u + v*v
		if s >= 1 || s == 0 {
			continue
		}
		f := math.Sqrt(-2 * math.Log(s) / s)
		return u * f, v * f
	}
}

// Constraint is what a site shares for one triplet: the symmetric d x d
// matrix C_ijk = (x_i-x_k)(x_i-x_k)' - (x_i-x_j)(x_i-x_j)', row-major.
type Constraint struct {
	D int
	C []float64
}

// SiteConstraints samples up to triplets (0 means DefaultTriplets) triplets
// (i, j, k) of distinct records of one site, uniformly, keeping those with
// |t_i - t_j| < |t_i - t_k| after ordering j and k (ties in distance are
// redrawn), and returns their C_ijk. A site with fewer than 3 records, or
// whose times admit no such triplet, contributes nothing. Only the returned
// matrices leave the site.
func SiteConstraints(x [][]float64, t []float64, triplets int, src dp.Source) ([]Constraint, error) {
	if len(x) != len(t) {
		return nil, fmt.Errorf("site constraints: %d rows and %d times", len(x), len(t))
	}
	if triplets == 0 {
		triplets = DefaultTriplets
	}
	if triplets < 0 {
		return nil, fmt.Errorf("site constraints: triplets must be >= 0, got %d", triplets)
	}
	if src == nil {
		return nil, errors.New("site constraints: nil source")
	}
	n := len(x)
	if n < 3 {
		return nil, nil
	}
	d := len(x[0])
	for i, row := range x {
		if len(row) != d {
			return nil, fmt.Errorf("site constraints: row %d has %d covariates, row 0 has %d", i, len(row), d)
		}
	}
	out := make([]Constraint, 0, triplets)
	for tries := 0; len(out) < triplets && tries < 50*triplets; tries++ {
		i := int(dp.Uint64n(src, uint64(n)))
		j := int(dp.Uint64n(src, uint64(n-1)))
		if j >= i {
			j++
		}
		k := int(dp.Uint64n(src, uint64(n-2)))
		lo, hi := min(i, j), max(i, j)
		if k >= lo {
			k++
		}
		if k >= hi {
			k++
		}
		dj, dk := math.Abs(t[i]-t[j]), math.Abs(t[i]-t[k])
		if dj == dk {
			continue
		}
		if dj > dk {
			j, k = k, j
		}
		c := make([]float64, d*d)
		for a := 0; a < d; a++ {
			ka := x[i][a] - x[k][a]
			ja := x[i][a] - x[j][a]
			for b := 0; b < d; b++ {
				c[a*d+b] = ka*(x[i][b]-x[k][b]) - ja*(x[i][b]-x[j][b])
			}
		}
		out = append(out, Constraint{D: d, C: c})
	}
	return out, nil
}

// OptimalOptions configures the LP of Optimal.
type OptimalOptions struct {
	// L1 is lambda, the weight of sum_l ||A_l||_1; 0 means DefaultL1.
	L1 float64
	// ZeroTol: a feature whose diagonal A_ll is at most ZeroTol times the
	// largest diagonal is dropped; 0 means 1e-9.
	ZeroTol float64
}

// Optimal solves the LP of mechanisms.md section 6 over the pooled
// constraints for A (d x d) and returns B = V_m D_m^(1/2) from the
// eigendecomposition of A restricted to its non-zero rows and columns; rows
// of dropped features are zero.
func Optimal(d, m int, cons []Constraint, opts OptimalOptions) (*Projection, error) {
	if err := checkDims(d, m); err != nil {
		return nil, fmt.Errorf("optimal projection: %w", err)
	}
	if len(cons) == 0 {
		return nil, errors.New("optimal projection: no triplet constraints")
	}
	for k, c := range cons {
		if c.D != d || len(c.C) != d*d {
			return nil, fmt.Errorf("optimal projection: constraint %d is not %dx%d", k, d, d)
		}
	}
	if opts.L1 == 0 {
		opts.L1 = DefaultL1
	}
	if !(opts.L1 > 0) || math.IsInf(opts.L1, 0) {
		return nil, fmt.Errorf("optimal projection: l1 weight must be positive and finite, got %v", opts.L1)
	}
	if opts.ZeroTol == 0 {
		opts.ZeroTol = 1e-9
	}
	a, err := SolveGram(d, cons, opts.L1)
	if err != nil {
		return nil, fmt.Errorf("optimal projection: %w", err)
	}
	p, err := FromGram(d, m, a, opts.ZeroTol)
	if err != nil {
		return nil, fmt.Errorf("optimal projection: %w", err)
	}
	return p, nil
}

// SolveGram solves the LP for A and returns it row-major (d*d, symmetric).
//
// Standard form (all variables >= 0), with P = d(d-1)/2 pairs l < c and T
// constraints:
//
//	variables: A_ll (d), and per pair A_lc = Pos - Neg and S_lc (3P), xi (T),
//	           surplus of the triplet rows (T), slack of |A_lc| <= S_lc (P),
//	           slack of the dominance rows (d)
//	triplet k: sum_l C_ll A_ll + sum_{l<c} 2 C_lc (Pos - Neg) + xi_k - sur_k = 1
//	pair lc:   Pos + Neg - S_lc + slack = 0          (|A_lc| <= S_lc)
//	row l:     sum_{c != l} S_lc - A_ll + slack = 0  (diagonal dominance)
//	minimise   sum xi + lambda (sum_l A_ll + 2 sum_{l<c} (Pos + Neg))
//
// (Pos + Neg >= |A_lc|, with equality at an optimum since the objective
// charges both.) The basis {xi, slacks} is an identity, feasible at A = 0,
// xi = 1, and is passed to the simplex as the starting basis.
func SolveGram(d int, cons []Constraint, l1 float64) ([]float64, error) {
	P := d * (d - 1) / 2
	T := len(cons)
	nv := d + 3*P + 2*T + P + d
	nr := T + P + d
	offPair := d
	offXi := d + 3*P
	offSur := offXi + T
	offSlackP := offSur + T
	offSlackD := offSlackP + P
	pairIdx := func(l, c int) int { // l < c
		return l*d - l*(l+1)/2 + (c - l - 1)
	}
	A := mat.NewDense(nr, nv, nil)
	b := make([]float64, nr)
	cost := make([]float64, nv)
	for l := 0; l < d; l++ {
		cost[l] = l1
	}
	for q := 0; q < P; q++ {
		cost[offPair+3*q] = 2 * l1
		cost[offPair+3*q+1] = 2 * l1
	}
	for k := 0; k < T; k++ {
		cost[offXi+k] = 1
	}
	for k, c := range cons {
		for l := 0; l < d; l++ {
			A.Set(k, l, c.C[l*d+l])
			for cc := l + 1; cc < d; cc++ {
				q := pairIdx(l, cc)
				v := c.C[l*d+cc] + c.C[cc*d+l]
				A.Set(k, offPair+3*q, v)
				A.Set(k, offPair+3*q+1, -v)
			}
		}
		A.Set(k, offXi+k, 1)
		A.Set(k, offSur+k, -1)
		b[k] = 1
	}
	for l := 0; l < d; l++ {
		for cc := l + 1; cc < d; cc++ {
			q := pairIdx(l, cc)
			r := T + q
			A.Set(r, offPair+3*q, 1)
			A.Set(r, offPair+3*q+1, 1)
			A.Set(r, offPair+3*q+2, -1)
			A.Set(r, offSlackP+q, 1)
		}
	}
	for l := 0; l < d; l++ {
		r := T + P + l
		A.Set(r, l, -1)
		for cc := 0; cc < d; cc++ {
			if cc == l {
				continue
			}
			q := pairIdx(min(l, cc), max(l, cc))
			A.Set(r, offPair+3*q+2, 1)
		}
		A.Set(r, offSlackD+l, 1)
	}
	basic := make([]int, 0, nr)
	for k := 0; k < T; k++ {
		basic = append(basic, offXi+k)
	}
	for q := 0; q < P; q++ {
		basic = append(basic, offSlackP+q)
	}
	for l := 0; l < d; l++ {
		basic = append(basic, offSlackD+l)
	}
	_, x, err := lp.Simplex(cost, A, b, 1e-10, basic)
	if err != nil {
		return nil, fmt.Errorf("simplex: %w", err)
	}
	g := make([]float64, d*d)
	for l := 0; l < d; l++ {
		g[l*d+l] = x[l]
		for cc := l + 1; cc < d; cc++ {
			q := pairIdx(l, cc)
			v := x[offPair+3*q] - x[offPair+3*q+1]
			g[l*d+cc] = v
			g[cc*d+l] = v
		}
	}
	return g, nil
}

// FromGram builds B from a positive semidefinite A (d*d row-major): features
// whose diagonal is at most zeroTol times the largest are dropped, the rest
// of A is eigendecomposed, and B = V_m D_m^(1/2) with the m largest
// eigenvalues. If A has rank r < m, B has r columns (see Warnings).
func FromGram(d, m int, a []float64, zeroTol float64) (*Projection, error) {
	if err := checkDims(d, m); err != nil {
		return nil, err
	}
	if len(a) != d*d {
		return nil, fmt.Errorf("gram matrix has %d entries, want %d", len(a), d*d)
	}
	var maxDiag float64
	for l := 0; l < d; l++ {
		maxDiag = math.Max(maxDiag, a[l*d+l])
	}
	if !(maxDiag > 0) {
		return nil, errors.New("the solution is A = 0: no feature kept (lower the l1 weight)")
	}
	var kept []int
	for l := 0; l < d; l++ {
		if a[l*d+l] > zeroTol*maxDiag {
			kept = append(kept, l)
		}
	}
	d1 := len(kept)
	sub := mat.NewSymDense(d1, nil)
	for r, l := range kept {
		for c, k := range kept {
			sub.SetSym(r, c, (a[l*d+k]+a[k*d+l])/2)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(sub, true) {
		return nil, errors.New("eigendecomposition failed")
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	order := make([]int, d1)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return vals[order[i]] > vals[order[j]] })
	// rank: eigenvalues above zeroTol times the largest
	rank := 0
	for _, i := range order {
		if vals[i] > zeroTol*vals[order[0]] {
			rank++
		}
	}
	if rank < 1 {
		return nil, errors.New("the Gram matrix A has rank 0 on the kept features")
	}
	var warnings []string
	mEff := m
	if rank < m {
		// An LP optimum is a vertex, often of low rank: project to the
		// rank rather than emit constant (all-zero) coordinates.
		mEff = rank
		warnings = append(warnings, fmt.Sprintf("A has rank %d (%d features kept), below m = %d: projecting to %d dimensions", rank, d1, m, rank))
	}
	p := &Projection{d: d, m: mEff, b: make([]float64, d*mEff), kept: kept, warnings: warnings}
	for c := 0; c < mEff; c++ {
		s := math.Sqrt(vals[order[c]])
		for r, l := range kept {
			p.b[l*mEff+c] = vecs.At(r, order[c]) * s
		}
	}
	if d1 == mEff {
		p.warnings = append(p.warnings, fmt.Sprintf("m = %d equals the number of kept features: B is invertible on them and hides nothing", mEff))
	}
	return p, nil
}
