package regression

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// sortDescending gives the order sort.SliceStable with > gives.
func TestSortDescendingMatchesStableSort(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	cases := [][]float64{
		{}, {1}, {0, math.Copysign(0, -1), 0, -1, 2, 2, -1e300, 1e300, 5e-324, -5e-324},
	}
	for range 20 { // integer times in [0, 65536): the one-pass sort
		x := make([]float64, r.IntN(3000))
		for i := range x {
			x[i] = float64(r.IntN(1 + r.IntN(65536)))
		}
		if len(x) > 2 {
			x[0], x[1], x[2] = math.Copysign(0, -1), 65535, 0
		}
		cases = append(cases, x)
	}
	for range 50 {
		n := r.IntN(3000)
		x := make([]float64, n)
		for i := range x {
			switch r.IntN(3) {
			case 0:
				x[i] = float64(r.IntN(20))
			case 1:
				x[i] = r.NormFloat64() * 1e3
			default:
				x[i] = float64(r.IntN(4000)) / 7
			}
		}
		cases = append(cases, x)
	}
	for _, x := range cases {
		want := make([]int, len(x))
		for i := range want {
			want[i] = i
		}
		sort.SliceStable(want, func(a, b int) bool { return x[want[a]] > x[want[b]] })
		idx, keys := sortDescending(x, nil)
		got := make([]int, len(idx))
		for i, j := range idx {
			got[i] = int(j)
		}
		if !reflect.DeepEqual(got, want) && len(x) > 0 {
			t.Fatalf("order of %v\n%v, want\n%v", x, got, want)
		}
		// with first: the first rows lead among equal times, each part in
		// row order
		first := make([]bool, len(x))
		for i := range first {
			first[i] = r.IntN(2) == 0
		}
		wantFirst := make([]int, len(x))
		for i := range wantFirst {
			wantFirst[i] = i
		}
		sort.SliceStable(wantFirst, func(a, b int) bool {
			ia, ib := wantFirst[a], wantFirst[b]
			if x[ia] != x[ib] {
				return x[ia] > x[ib]
			}
			return first[ia] && !first[ib]
		})
		idxFirst, _ := sortDescending(x, first)
		for k, i := range idxFirst {
			if int(i) != wantFirst[k] {
				t.Fatalf("order of %v with first %v\n%v, want\n%v", x, first, idxFirst, wantFirst)
			}
		}
		// equal sorted keys are exactly the equal times
		for i := 1; i < len(keys); i++ {
			if (keys[i] == keys[i-1]) != (x[got[i]] == x[got[i-1]]) || keys[i] < keys[i-1] {
				t.Fatalf("keys %d, %d at %d do not match times %v, %v", keys[i-1], keys[i], i, x[got[i-1]], x[got[i]])
			}
		}
	}
}

// The grouped evaluation (closed-form Efron terms per run of tied times,
// events first in each run, exp skipped at beta = 0) agrees with the
// direct one, term by term, on heavy and light ties, both tie methods.
func TestCoxEvalMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for c := range 40 {
		n := 1 + r.IntN(2000)
		p := 1 + r.IntN(5)
		distinct := 1 + r.IntN(n) // from one time for all to mostly distinct
		time, event, rows := randomCoxRows(r, n, p, distinct)
		cd := newCoxData(time, event, rows, nil, p)
		groups, ev := refGroups(cd)
		for _, ties := range []Ties{TiesEfron, TiesBreslow} {
			for _, scale := range []float64{0, 0.1, 1} {
				beta := make([]float64, p)
				for j := range beta {
					beta[j] = scale * r.NormFloat64()
				}
				u, imat := make([]float64, p), make([]float64, p*p)
				ru, rimat := make([]float64, p), make([]float64, p*p)
				ll := cd.eval(beta, ties, u, imat)
				want := coxEvalRef(cd.x, p, ev, groups, beta, ties, ru, rimat)
				checkEvalRef(t, fmt.Sprintf("case %d %s scale %g", c, ties, scale), n, ll, u, imat, want, ru, rimat)
			}
		}
	}
}

// An outlier on the side beta points away from: its exp underflows to 0
// (its weight is below 1e-300 of the others') and the evaluation still
// agrees with the reference.
func TestCoxEvalFarBound(t *testing.T) {
	t.Parallel()
	n := 200
	time := make([]float64, n)
	event := make([]bool, n)
	rows := make([][]float64, n)
	for i := range n {
		time[i] = float64(i % 17)
		event[i] = i%3 != 0
		rows[i] = []float64{float64(i%7) - 3, float64(i % 2)}
	}
	rows[5][0] = -5000 // centred, |x| is far larger on the negative side
	cd := newCoxData(time, event, rows, nil, 2)
	cd.ensureX() // the reference reads the centred rows (lattice rows are kept as indices)
	groups, ev := refGroups(cd)
	beta := []float64{1, 0.5} // the outlier's predictor is far below the others
	u, imat := make([]float64, 2), make([]float64, 4)
	ru, rimat := make([]float64, 2), make([]float64, 4)
	ll := cd.eval(beta, TiesEfron, u, imat)
	want := coxEvalRef(cd.x, 2, ev, groups, beta, TiesEfron, ru, rimat)
	if !closeRel(ll, want, 1e-11, 0) {
		t.Fatalf("loglik %v, reference %v", ll, want)
	}
	for j := range imat {
		if !closeRel(imat[j], rimat[j], 1e-9, 1e-12) {
			t.Fatalf("imat %v, reference %v", imat, rimat)
		}
	}
}
