package regression

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCoxLatticeMatchesExact: with covariates on a small lattice (integer
// ages, 0/1 indicators, a value to one decimal) the evaluation takes the
// lattice path (a table product per row, cox_lattice.go) and gives the
// log partial likelihood, score and information of the exact path (exp of
// each row's linear predictor) to 1e-12 relative, at ordinary and large
// coefficients, with 3 covariates (the unrolled loop) and 2 (the generic
// one), Efron and Breslow, split by runs and in one scan; where the tables' exponent spread exceeds
// coxLatticeSpread the evaluation falls back to the exact path; covariates
// off any small lattice get none.
func TestCoxLatticeMatchesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 5000
	time := make([]float64, n)
	event := make([]bool, n)
	flat := make([]float64, 3*n)
	for i := range n {
		time[i] = float64(1 + rng.IntN(400))
		event[i] = rng.IntN(3) != 0
		flat[3*i] = float64(30 + rng.IntN(60))
		flat[3*i+1] = float64(rng.IntN(2))
		flat[3*i+2] = float64(150+rng.IntN(250)) / 10
	}
	for _, p := range []int{3, 2} {
		x := flat
		if p == 2 {
			x = make([]float64, 2*n)
			for i := range n {
				x[2*i], x[2*i+1] = flat[3*i], flat[3*i+2]
			}
		}
		cd := newCoxData(time, event, nil, x, p)
		if cd.lat == nil {
			t.Fatalf("p %d: no lattice found", p)
		}
		// the one-scan path (many distinct times) on lattice rows
		seq := newCoxData(time, event, nil, x, p)
		seq.gt, seq.gd, seq.workers, seq.wb = nil, nil, 1, []int{0, len(seq.groups)}
		exact := newCoxData(time, event, nil, x, p)
		exact.ensureX() // the rows as floats, then the exact path only
		exact.lat = nil
		betas := [][]float64{{0.02, -0.3, 0.05}, {-0.5, 2, 1}, {3, 0, -2}, {40, 0, 0}}
		for _, b := range betas {
			beta := b[:p]
			for _, ties := range []Ties{TiesEfron, TiesBreslow} {
				u1, i1 := make([]float64, p), make([]float64, p*p)
				u2, i2 := make([]float64, p), make([]float64, p*p)
				l1 := cd.eval(beta, ties, u1, i1)
				l2 := exact.eval(beta, ties, u2, i2)
				if !closeRel(l1, l2, 1e-12, 0) {
					t.Errorf("p %d beta %v %s: loglik %v, exact %v", p, beta, ties, l1, l2)
				}
				u3, i3 := make([]float64, p), make([]float64, p*p)
				// (at beta 40 the information is roundoff, ~1e-9, on both
				// paths: compared where it is not)
				if l3 := seq.eval(beta, ties, u3, i3); !closeRel(l3, l2, 1e-12, 0) || (b[0] < 10 && !closeRel(i3[0], i2[0], 1e-9, 1e-12)) {
					t.Errorf("p %d beta %v %s: one scan: loglik %v info %v, exact %v %v", p, beta, ties, l3, i3[0], l2, i2[0])
				}
				for j := range u1 {
					if !closeRel(u1[j], u2[j], 1e-9, 1e-9*math.Abs(l2)/float64(n)) {
						t.Errorf("p %d beta %v %s: score %v, exact %v", p, beta, ties, u1, u2)
						break
					}
				}
				for j := range i1 {
					if !closeRel(i1[j], i2[j], 1e-9, 1e-12) {
						t.Errorf("p %d beta %v %s: information %v, exact %v", p, beta, ties, i1, i2)
						break
					}
				}
			}
			_, direct := cd.lat.fill(beta, cd.mean)
			if wantDirect := b[0] < 10; direct != wantDirect {
				t.Errorf("p %d beta %v: lattice path %v, want %v (spread bound %v)", p, beta, direct, wantDirect, coxLatticeSpread)
			}
		}
	}
	// off the lattice: a continuous covariate
	cont := make([]float64, n)
	for i := range cont {
		cont[i] = rng.NormFloat64()
	}
	if cd := newCoxData(time, event, nil, cont, 1); cd.lat != nil {
		t.Error("continuous covariate: lattice found")
	}
	// a range too wide for the tables
	wide := make([]float64, n)
	for i := range wide {
		wide[i] = float64(rng.IntN(1 << 20))
	}
	if cd := newCoxData(time, event, nil, wide, 1); cd.lat != nil {
		t.Error("covariate over 2^20 integers: lattice found")
	}
}
