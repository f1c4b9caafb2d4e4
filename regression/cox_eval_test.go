package regression

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCoxEvalWorkers: the evaluation from per-run sums gives the same bits
// with 1, 2 and 3 workers (the runs' sums do not depend on the split), and
// agrees with the one-scan evaluation (used when the runs are many) and
// with the direct reference.
func TestCoxEvalWorkers(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for c := range 12 {
		n := 500 + r.IntN(5000)
		p := 1 + r.IntN(4)
		distinct := 1 + r.IntN(n/2)
		time, event, rows := randomCoxRows(r, n, p, distinct)
		cd := newCoxData(time, event, rows, nil, p)
		if cd.gt == nil {
			t.Fatalf("case %d: %d runs, no per-run sums", c, len(cd.groups))
		}
		groups, ev := refGroups(cd)
		for _, ties := range []Ties{TiesEfron, TiesBreslow} {
			beta := make([]float64, p)
			for j := range beta {
				beta[j] = 0.3 * r.NormFloat64()
			}
			type out struct {
				ll      float64
				u, imat []float64
			}
			run := func() out {
				o := out{u: make([]float64, p), imat: make([]float64, p*p)}
				o.ll = cd.eval(beta, ties, o.u, o.imat)
				return o
			}
			var outs []out
			for _, w := range []int{1, 2, 3} {
				cd.setWorkers(w)
				outs = append(outs, run())
			}
			for k, o := range outs[1:] {
				same := o.ll == outs[0].ll
				for j := range o.u {
					same = same && o.u[j] == outs[0].u[j]
				}
				for j := range o.imat {
					same = same && o.imat[j] == outs[0].imat[j]
				}
				if !same {
					t.Fatalf("case %d %s: %d workers %+v, 1 worker %+v", c, ties, k+2, o, outs[0])
				}
			}
			gt, gd := cd.gt, cd.gd
			cd.gt, cd.gd = nil, nil
			cd.setWorkers(1)
			scan := run()
			cd.gt, cd.gd = gt, gd
			ru, rimat := make([]float64, p), make([]float64, p*p)
			want := coxEvalRef(cd.x, p, ev, groups, beta, ties, ru, rimat)
			for _, o := range []out{outs[0], scan} {
				checkEvalRef(t, fmt.Sprintf("case %d %s", c, ties), n, o.ll, o.u, o.imat, want, ru, rimat)
			}
		}
	}
}

// TestCoxManyRunsScan: distinct float times (a run per row) beyond the
// per-run sums' bound are evaluated by the one scan.
func TestCoxManyRunsScan(t *testing.T) {
	t.Parallel()
	n := coxGroupSumsMax/3 + 1 // p = 1: m = 3
	time := make([]float64, n)
	event := make([]bool, n)
	flat := make([]float64, n)
	for i := range n {
		time[i] = float64(i) + 0.5
		event[i] = i%2 == 0
		flat[i] = float64(i % 5)
	}
	cd := newCoxData(time, event, nil, flat, 1)
	if cd.gt != nil || cd.workers != 1 {
		t.Fatalf("%d runs: per-run sums %v, %d workers", len(cd.groups), cd.gt != nil, cd.workers)
	}
}
