package projection

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/stattest"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestRandomGaussian: the entries of B are N(0, 1/m). KS at level 0.001
// (the false-alarm rate of this fixed-seed test).
func TestRandomGaussian(t *testing.T) {
	const d, m = 60, 50
	p, err := Random(d, m, dp.NewSeededSource(7))
	if err != nil {
		t.Fatal(err)
	}
	var xs []float64
	for _, row := range p.Matrix() {
		for _, v := range row {
			xs = append(xs, v*math.Sqrt(m))
		}
	}
	crit := stattest.KSCritical(len(xs), 0.001)
	if D := stattest.KS(xs, distuv.UnitNormal.CDF); D > crit {
		t.Errorf("KS distance of the scaled entries to N(0,1) = %.4f > %.4f", D, crit)
	}
	// a wrong variance is rejected (the test has power against a 25% scale error)
	if D := stattest.KS(xs, distuv.Normal{Mu: 0, Sigma: 1.25}.CDF); D <= crit {
		t.Errorf("KS does not reject N(0, 1.25^2): D = %.4f", D)
	}
	// Apply is B'x
	x := make([]float64, d)
	x[3], x[17] = 2, -1
	z := p.Apply(x)
	B := p.Matrix()
	for c := 0; c < m; c++ {
		if want := 2*B[3][c] - B[17][c]; math.Abs(z[c]-want) > 1e-15 {
			t.Fatalf("z[%d] = %v, want %v", c, z[c], want)
		}
	}
}

func TestDimsValidation(t *testing.T) {
	src := dp.NewSeededSource(1)
	for _, c := range [][2]int{{0, 1}, {3, 0}, {3, 4}} {
		if _, err := Random(c[0], c[1], src); err == nil {
			t.Errorf("Random(%d, %d): no error", c[0], c[1])
		}
	}
	if _, err := Optimal(3, 2, nil, OptimalOptions{}); err == nil || !strings.Contains(err.Error(), "no triplet") {
		t.Errorf("no constraints: %v", err)
	}
	if _, err := Optimal(3, 2, []Constraint{{D: 2, C: make([]float64, 4)}}, OptimalOptions{}); err == nil {
		t.Error("constraint of the wrong size: no error")
	}
	if _, err := SiteConstraints([][]float64{{1}}, []float64{1, 2}, 3, src); err == nil {
		t.Error("rows/times mismatch: no error")
	}
	if c, err := SiteConstraints([][]float64{{1}, {2}}, []float64{1, 2}, 3, src); err != nil || len(c) != 0 {
		t.Errorf("two-record site: %d constraints, %v", len(c), err)
	}
}

// site makes n records whose feature 0 is the time (scaled) and the other
// d-1 features are noise.
func site(src dp.Source, n, d int) ([][]float64, []float64) {
	x := make([][]float64, n)
	ts := make([]float64, n)
	for i := range x {
		ts[i] = math.Floor(1000 * dp.Float64(src))
		x[i] = make([]float64, d)
		x[i][0] = ts[i] / 1000
		for j := 1; j < d; j++ {
			x[i][j] = 2*dp.Float64(src) - 1
		}
	}
	return x, ts
}

// TestSiteConstraintsOrdering: with feature 0 equal to the time, every
// shared C has C_00 = (t_i-t_k)^2 - (t_i-t_j)^2 > 0, i.e. every triplet
// satisfies |t_i - t_j| < |t_i - t_k|; C is symmetric.
func TestSiteConstraintsOrdering(t *testing.T) {
	src := dp.NewSeededSource(2)
	x, ts := site(src, 80, 3)
	cons, err := SiteConstraints(x, ts, 200, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(cons) != 200 {
		t.Fatalf("%d constraints, want 200", len(cons))
	}
	for k, c := range cons {
		if c.C[0] <= 0 {
			t.Errorf("constraint %d: C_00 = %v, triplet out of order", k, c.C[0])
		}
		for a := 0; a < 3; a++ {
			for b := 0; b < 3; b++ {
				if c.C[a*3+b] != c.C[b*3+a] {
					t.Fatalf("constraint %d not symmetric", k)
				}
			}
		}
	}
	// all-equal times admit no triplet: nothing, no error
	same := []float64{5, 5, 5, 5}
	c, err := SiteConstraints(x[:4], same, 10, src)
	if err != nil || len(c) != 0 {
		t.Errorf("equal times: %d constraints, %v", len(c), err)
	}
}

// lpObjective evaluates sum_k max(0, 1 - <A, C_k>) + l1 sum |A_lc|.
func lpObjective(a []float64, d int, cons []Constraint, l1 float64) float64 {
	var v float64
	for _, c := range cons {
		var ip float64
		for j := range a {
			ip += a[j] * c.C[j]
		}
		v += math.Max(0, 1-ip)
	}
	for _, x := range a {
		v += l1 * math.Abs(x)
	}
	return v
}

// TestOptimalSelectsTheTimeFeature: three sites share only their C
// matrices; the LP solution is diagonally dominant (hence PSD), keeps the
// informative feature, and is no worse than natural feasible candidates.
func TestOptimalSelectsTheTimeFeature(t *testing.T) {
	src := dp.NewSeededSource(9)
	const d = 4
	var cons []Constraint
	for s := 0; s < 3; s++ {
		x, ts := site(src, 60, d)
		c, err := SiteConstraints(x, ts, 30, src)
		if err != nil {
			t.Fatal(err)
		}
		cons = append(cons, c...)
	}
	const l1 = 0.1
	a, err := SolveGram(d, cons, l1)
	if err != nil {
		t.Fatal(err)
	}
	for l := 0; l < d; l++ {
		var off float64
		for c := 0; c < d; c++ {
			if math.Abs(a[l*d+c]-a[c*d+l]) > 1e-12 {
				t.Fatalf("A not symmetric at %d,%d", l, c)
			}
			if c != l {
				off += math.Abs(a[l*d+c])
			}
		}
		if off > a[l*d+l]+1e-9 {
			t.Errorf("row %d not diagonally dominant: off %v > diag %v", l, off, a[l*d+l])
		}
	}
	if a[0] <= 0 {
		t.Fatalf("A_00 = %v: the time feature is not kept", a[0])
	}
	for l := 1; l < d; l++ {
		if a[l*d+l] > 0.1*a[0] {
			t.Errorf("noise feature %d has A_ll = %v vs A_00 = %v", l, a[l*d+l], a[0])
		}
	}
	got := lpObjective(a, d, cons, l1)
	if zero := float64(len(cons)); got > zero+1e-9 {
		t.Errorf("LP objective %v worse than A = 0 (%v)", got, zero)
	}
	for _, scale := range []float64{1, 10, 100, 1000} {
		cand := make([]float64, d*d)
		for l := 0; l < d; l++ {
			cand[l*d+l] = scale
		}
		if v := lpObjective(cand, d, cons, l1); got > v+1e-7 {
			t.Errorf("LP objective %v worse than %v I (%v)", got, scale, v)
		}
		cand = make([]float64, d*d)
		cand[0] = scale
		if v := lpObjective(cand, d, cons, l1); got > v+1e-7 {
			t.Errorf("LP objective %v worse than %v e0e0' (%v)", got, scale, v)
		}
	}
	// Optimal is SolveGram then FromGram (TestOptimalIsSolveGramThenFromGram):
	// B is built from the A above instead of solving the LP a second time
	// (the solve is most of this test's cost under -race).
	p, err := FromGram(d, 2, a, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	if kept := p.Kept(); len(kept) == 0 || kept[0] != 0 {
		t.Errorf("kept %v, want feature 0 first", kept)
	}
	t.Logf("A diag %.4g %.4g %.4g %.4g, kept %v, warnings %v", a[0], a[5], a[10], a[15], p.Kept(), p.Warnings())
}

// TestOptimalIsSolveGramThenFromGram: Optimal returns the projection that
// FromGram builds from SolveGram's A (its default ZeroTol 1e-9 and its
// default L1 when L1 is 0), on a small LP (one site, 25 triplets).
func TestOptimalIsSolveGramThenFromGram(t *testing.T) {
	src := dp.NewSeededSource(9)
	const d = 3
	x, ts := site(src, 40, d)
	cons, err := SiteConstraints(x, ts, 25, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, l1 := range []float64{0, 0.1} {
		got, err := Optimal(d, 2, cons, OptimalOptions{L1: l1})
		if err != nil {
			t.Fatal(err)
		}
		lambda := l1
		if lambda == 0 {
			lambda = DefaultL1
		}
		a, err := SolveGram(d, cons, lambda)
		if err != nil {
			t.Fatal(err)
		}
		want, err := FromGram(d, 2, a, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("l1 %v: Optimal %+v, FromGram(SolveGram) %+v", l1, got, want)
		}
		if kept := got.Kept(); len(kept) == 0 || kept[0] != 0 {
			t.Errorf("l1 %v: kept %v, want feature 0 first", l1, kept)
		}
	}
}

func TestFromGram(t *testing.T) {
	// A = v1 v1' * 4 + v2 v2' on features 0 and 2; feature 1 is zero.
	v1 := []float64{1 / math.Sqrt2, 0, 1 / math.Sqrt2}
	v2 := []float64{1 / math.Sqrt2, 0, -1 / math.Sqrt2}
	a := make([]float64, 9)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			a[i*3+j] = 4*v1[i]*v1[j] + v2[i]*v2[j]
		}
	}
	p, err := FromGram(3, 2, a, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Kept(); len(k) != 2 || k[0] != 0 || k[1] != 2 {
		t.Errorf("kept %v, want [0 2]", k)
	}
	B := p.Matrix()
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			var bb float64
			for c := 0; c < 2; c++ {
				bb += B[i][c] * B[j][c]
			}
			if math.Abs(bb-a[i*3+j]) > 1e-12 {
				t.Errorf("(BB')[%d][%d] = %v, A = %v", i, j, bb, a[i*3+j])
			}
		}
	}
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "invertible") {
		t.Errorf("warnings %v, want the invertibility warning", w)
	}
	// the leading column carries the largest eigenvalue (4): |B_.0| = 2
	if n := math.Hypot(B[0][0], B[2][0]); math.Abs(n-2) > 1e-12 {
		t.Errorf("first column norm %v, want 2", n)
	}
	// rank 1 with m = 2: one column and a warning
	r1 := []float64{1, 0, 0, 0, 0, 0, 0, 0, 0}
	p, err = FromGram(3, 2, r1, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	if _, m := p.Dims(); m != 1 || !strings.Contains(strings.Join(p.Warnings(), ";"), "rank 1") {
		t.Errorf("rank-1 A: m = %d, warnings %v", m, p.Warnings())
	}
	if _, err := FromGram(3, 1, make([]float64, 9), 1e-9); err == nil {
		t.Error("A = 0: no error")
	}
}
