package regression

import (
	"math/rand/v2"
	"testing"
)

// TestLogitTerms3MatchesGeneral: recordTerms' e = 3 logit loop
// (logitTerms3) leaves the same bits as its general loop, which runs on the
// same model with a fourth, zero basis column (adding g 0 changes no sum):
// every record, at the start, moderate and extreme points (the latter off
// the product form).
func TestLogitTerms3MatchesGeneral(t *testing.T) {
	t.Parallel()
	m := smallNewtonProblem(t, rand.New(rand.NewPCG(3, 3)), 3000, 60, LinkLogit)
	if m.e != 3 {
		t.Fatalf("e = %d, want the default 3", m.e)
	}
	m4 := padBasis(m)
	an, an4 := make([]float64, m.q), make([]float64, m.q)
	for s := range m.q {
		an[s], an4[s] = sqNorm(m.basis[3*s:3*s+3]), sqNorm(m4.basis[4*s:4*s+4])
	}
	for _, f := range newtonPoints {
		f4 := append(append(append([]float64(nil), f[:3]...), 0), f[3:]...)
		st, st4 := m.newState(), m4.newState()
		m.prepare(st, f[:3])
		m4.prepare(st4, f4[:4])
		rt, rt4 := m.newRecordTerms(), m4.newRecordTerms()
		for i := range m.n {
			m.recordTerms(i, f[3:], st, an, nil, rt)
			m4.recordTerms(i, f4[4:], st4, an4, nil, rt4)
			same := rt.k == rt4.k && sameFloat(rt.gsum, rt4.gsum) && sameFloat(rt.hsum, rt4.hsum) && sameFloat(rt.tr, rt4.tr) &&
				rt4.ga[3] == 0 && rt4.va[3] == 0
			for j := range 3 {
				same = same && sameFloat(rt.ga[j], rt4.ga[j]) && sameFloat(rt.va[j], rt4.va[j])
			}
			for s := 0; s <= rt.k; s++ {
				same = same && sameFloat(rt.gw[s], rt4.gw[s]) && sameFloat(rt.hw[s], rt4.hw[s])
			}
			if !same {
				t.Fatalf("at %v record %d: e = 3 terms %+v, general %+v", f, i, *rt, *rt4)
			}
		}
	}
}

// padBasis is m (e = 3) with a fourth, zero basis column: its records
// take the general loops, where adding g 0 changes no sum.
func padBasis(m *discreteModel) discreteModel {
	m4 := *m
	m4.e = 4
	m4.basis = make([]float64, 0, 4*m.q)
	for s := range m.q {
		m4.basis = append(m4.basis, m.basis[3*s:3*s+3]...)
		m4.basis = append(m4.basis, 0)
	}
	return m4
}

// TestLogitSurvived3MatchesGeneral: the MLE's e = 3 logit loop
// (logitSurvived3) accumulates the same bits as record's general loop (on
// padBasis' model) into the loss, gradient and Hessian sums, at the
// privacy tests' points and at a high hazard whose product of (1 + t)
// passes 1e250 (the loss's logarithm taken along the way).
func TestLogitSurvived3MatchesGeneral(t *testing.T) {
	t.Parallel()
	m := smallNewtonProblem(t, rand.New(rand.NewPCG(5, 3)), 3000, 60, LinkLogit)
	m4 := padBasis(m)
	for _, f := range append([][]float64{{12, 0, 0, 0.5, 0.5}}, newtonPoints...) {
		f4 := append(append(append([]float64(nil), f[:3]...), 0), f[3:]...)
		st, st4 := m.newState(), m4.newState()
		m.prepare(st, f[:3])
		m4.prepare(st4, f4[:4])
		ac, ac4 := m.newAccum(true), m4.newAccum(true)
		for i := range m.n {
			m.record(i, f[3:], st, ac, true, true)
			m4.record(i, f4[4:], st4, ac4, true, true)
		}
		same := sameFloat(ac.loss, ac4.loss)
		for _, pr := range [][2][]float64{{ac.gs, ac4.gs}, {ac.hs, ac4.hs}, {ac.gb, ac4.gb}, {ac.hbb, ac4.hbb}, {ac.hab, ac4.hab[:3*m.p]}} {
			for j := range pr[0] {
				same = same && sameFloat(pr[0][j], pr[1][j])
			}
		}
		if !same {
			t.Fatalf("at %v: e = 3 sums differ from the general loop's: loss %v, %v", f, ac.loss, ac4.loss)
		}
	}
}

// TestUnclippedDirectSameSums: the logit sums with the unclipped records'
// terms added directly (unclippedBound) are those of the two-pass route,
// bit for bit: the two-pass route is forced by weights of 1 (no bound is
// used with weights; multiplying by 1 changes nothing), on the study world
// at the truth, at the start and at the privacy tests' points (clipping and
// off the product form); and at the truth the bound certifies at least 90%
// of the records (measured: 99.9%), so the direct route is the one tested,
// and every certified record's clip factors, from its full terms (which
// the direct route does not compute), are 1.
func TestUnclippedDirectSameSums(t *testing.T) {
	t.Parallel()
	o, _ := NewtonOptions{}.resolve(DefaultIntervals)
	cl := o.clips()
	d := newtonWorld(rand.NewPCG(8, 7), 20000, LinkLogit)
	pr, err := prepareDiscrete(d, &DiscreteOptions{Method: MethodNewton, Link: LinkLogit, TimeMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	small := smallNewtonProblem(t, rand.New(rand.NewPCG(9, 9)), 5000, 30, LinkLogit)
	for _, c := range []struct {
		m  *discreteModel
		fs [][]float64
	}{{pr.m, [][]float64{{-3, 0, 0, 1, -1}, {-3, 0, 0, 0, 0}}}, {small, newtonPoints}} {
		ones := make([]float64, c.m.n)
		for i := range ones {
			ones[i] = 1
		}
		for _, f := range c.fs {
			got, want := c.m.clippedSumsW(f, cl, nil), c.m.clippedSumsW(f, cl, ones)
			for b := range nBlocks {
				for j := range want[b] {
					if !sameFloat(got[b][j], want[b][j]) {
						t.Fatalf("n %d at %v: block %d[%d] = %v direct, %v two-pass", c.m.n, f, b, j, got[b][j], want[b][j])
					}
				}
			}
		}
	}
	m, f := pr.m, []float64{-3, 0, 0, 1, -1}
	st := m.newState()
	m.prepare(st, f[:3])
	an := make([]float64, m.q)
	for s := range m.q {
		an[s] = sqNorm(m.basis[3*s : 3*s+3])
	}
	rt, full := m.newRecordTerms(), m.newRecordTerms() // full: no bound, every piece computed
	rt.bound, rt.into = m.newUnclippedBound(st, an, cl), m.newClipAccum()
	direct := 0
	for i := range m.n {
		m.recordTerms(i, f[3:], st, an, nil, rt)
		if rt.direct {
			direct++
			m.recordTerms(i, f[3:], st, an, nil, full)
			if ca, _, caa, _, _ := recordClips(full, cl); ca != 1 || caa != 1 {
				t.Fatalf("record %d: certified unclipped, clip factors %v, %v", i, ca, caa)
			}
		}
	}
	if direct < m.n*9/10 {
		t.Errorf("the bound certified %d of %d records, want >= 90%%", direct, m.n)
	}
}
