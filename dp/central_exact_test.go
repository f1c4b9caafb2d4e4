package dp

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/internal/stattest"
)

// TestBernoulliExp: the frequency of true matches exp(-num/den) for
// fractional and integer parts (binomial z-test at 4.4 standard errors per
// case: false-alarm rate about 1e-5, seeded).
func TestBernoulliExp(t *testing.T) {
	src := NewSeededSource(77)
	for _, x := range []float64{0, 0.3, 1, 2.7, 5.25} {
		num, den, err := RationalDown(x)
		if err != nil {
			t.Fatal(err)
		}
		const draws = 200000
		hits := 0
		for i := 0; i < draws; i++ {
			if BernoulliExp(src, num, den) {
				hits++
			}
		}
		p := math.Exp(-float64(num) / float64(den))
		se := math.Sqrt(p * (1 - p) / draws)
		if got := float64(hits) / draws; math.Abs(got-p) > 4.4*se+1e-12 {
			t.Errorf("x = %v: frequency %v, want %v ± %v", x, got, p, 4.4*se)
		}
	}
	if BernoulliExp(src, 1, 0) {
		t.Error("den 0 must give false")
	}
}

func TestRationalDownRoundsDown(t *testing.T) {
	for _, x := range []float64{0.1, 1.0 / 3, math.Pi, 1e-12} {
		num, den, err := RationalDown(x)
		if err != nil {
			t.Fatal(err)
		}
		if r := float64(num) / float64(den); r > x || x-r > 1.0/float64(den) {
			t.Errorf("RationalDown(%v) = %v", x, r)
		}
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), 1 << 33} {
		if _, _, err := RationalDown(bad); err == nil {
			t.Errorf("RationalDown(%v): no error", bad)
		}
	}
}

// TestGridLaplaceVector: the released values are multiples of the grid and
// centred on the rounded input; bad inputs are errors.
func TestGridLaplaceVector(t *testing.T) {
	src := NewSeededSource(5)
	g := 1.0 / 1024
	v := []float64{0.3, -2.71828, 1e3}
	sum := make([]float64, len(v))
	const reps = 20000
	for r := 0; r < reps; r++ {
		out, err := GridLaplaceVector(src, v, g, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range out {
			if x/g != math.Trunc(x/g) {
				t.Fatalf("%v is not on the grid %v", x, g)
			}
			sum[j] += x
		}
	}
	for j := range v {
		// mean of round_g(v) + noise; noise SD about 0.5*sqrt(2)
		if m := sum[j] / reps; math.Abs(m-math.Round(v[j]/g)*g) > 5*0.71/math.Sqrt(reps) {
			t.Errorf("coordinate %d: mean %v, want %v", j, m, math.Round(v[j]/g)*g)
		}
	}
	for _, c := range []struct {
		v        []float64
		g, scale float64
	}{{[]float64{1}, 0, 1}, {[]float64{math.NaN()}, 1, 1}, {[]float64{1}, 1, 0}} {
		if _, err := GridLaplaceVector(src, c.v, c.g, c.scale); err == nil {
			t.Errorf("GridLaplaceVector(%v, %v, %v): no error", c.v, c.g, c.scale)
		}
	}
}

// TestDiscreteGaussian: chi-square of the draws against the exact pmf
// exp(-y^2/(2 sigma2))/Z (cells with expected count >= 5, the tails pooled;
// false-alarm rate 1e-4 per case, seeded), and the grid version's values
// lie on a power-of-two grid with the right variance.
func TestDiscreteGaussian(t *testing.T) {
	for _, sigma2 := range []uint64{1, 7, 50} {
		src := NewSeededSource(sigma2)
		const draws = 100000
		counts := map[int64]float64{}
		for i := 0; i < draws; i++ {
			y, err := DiscreteGaussian(src, sigma2)
			if err != nil {
				t.Fatal(err)
			}
			counts[y]++
		}
		lim := int64(8*math.Sqrt(float64(sigma2))) + 2
		var z float64
		for y := -lim; y <= lim; y++ {
			z += math.Exp(-float64(y*y) / (2 * float64(sigma2)))
		}
		var obs, exp []float64
		for y := -lim; y <= lim; y++ {
			obs = append(obs, counts[y])
			exp = append(exp, draws*math.Exp(-float64(y*y)/(2*float64(sigma2)))/z)
		}
		chi, df := stattest.PooledChiSquare(obs, exp)
		if crit := stattest.ChiSquareCritical(df, 1e-4); chi > crit {
			t.Errorf("sigma2 %d: chi-square %v > %v on %d df", sigma2, chi, crit, df)
		}
	}
	if _, err := DiscreteGaussian(NewSeededSource(1), 0); err == nil {
		t.Error("sigma2 0: no error")
	}
	src := NewSeededSource(9)
	var ss float64
	const n = 40000
	for i := 0; i < n; i++ {
		x, err := GaussianOnGrid(src, 0.37)
		if err != nil {
			t.Fatal(err)
		}
		if g := math.Ldexp(1, -12); x/g != math.Trunc(x/g) {
			t.Fatalf("%v not on the grid", x)
		}
		ss += x * x
	}
	if v := ss / n; math.Abs(v-0.37*0.37) > 5*0.37*0.37*math.Sqrt(2.0/n) {
		t.Errorf("variance %v, want %v", v, 0.37*0.37)
	}
}
