package regression

import (
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
		if got := sortDescending(x); !reflect.DeepEqual(got, want) && len(x) > 0 {
			t.Fatalf("order of %v\n%v, want\n%v", x, got, want)
		}
	}
}
