package regression

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func worldData(rng *rand.Rand, n int, link Link) Data {
	const q = DefaultIntervals
	beta := []float64{1, -1}
	h := 1 / math.Sqrt2
	d := Data{Time: make([]float64, n), Event: make([]bool, n), X: make([][]float64, n)}
	for i := 0; i < n; i++ {
		x := []float64{(2*rng.Float64() - 1) * h, (2*rng.Float64() - 1) * h}
		u := -3 + beta[0]*x[0] + beta[1]*x[1]
		p := 1 / (1 + math.Exp(-u))
		if link == LinkCloglog {
			p = -math.Expm1(-math.Exp(u))
		}
		c := 1 + rng.IntN(q)
		s, ev := c, false
		for k := 1; k <= c; k++ {
			if rng.Float64() < p {
				s, ev = k, true
				break
			}
		}
		d.Time[i], d.Event[i], d.X[i] = float64(s)/q, ev, x
	}
	return d
}

func TestNewtonExplore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, link := range []Link{LinkLogit, LinkCloglog} {
		d := worldData(rng, 50000, link)
		mle, err := FitDiscrete(d, DiscreteOptions{Method: MethodMLE, Link: link, TimeMax: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := MeanInformation(d, DiscreteOptions{Method: MethodMLE, Link: link, TimeMax: 1}, append(append([]float64{}, mle.Alpha...), mle.Beta...))
		_ = info
		for _, eps := range []float64{1, 1e6} {
			res, err := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: link, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(uint64(eps*10)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s eps %v: mle beta %.4f %.4f | newton beta %.4f %.4f se %.4f %.4f  alpha %.3f vs %.3f  %s", link, eps, mle.Beta[0], mle.Beta[1], res.Beta[0], res.Beta[1], res.BetaSE[0], res.BetaSE[1], res.Alpha, mle.Alpha, res.IntervalMethod[:10])
		}
	}
}

func TestNewtonClipStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := worldData(rng, 50000, LinkCloglog)
	pr, _ := prepareDiscrete(d, &DiscreteOptions{Method: MethodNewton, Link: LinkCloglog, TimeMax: 1})
	mle, _ := FitDiscrete(d, DiscreteOptions{Method: MethodMLE, Link: LinkCloglog, TimeMax: 1}, nil)
	f := append(append([]float64{}, mle.Alpha...), mle.Beta...)
	for _, c := range []float64{1e9, 20, 10, 5, 3} {
		s, h := pr.m.clippedSums(f, c, c)
		t.Logf("clip %v: score %v  hess[0] %.0f hess_bb %.0f", c, s, h[0], h[len(h)-1])
	}
}

func TestNewtonCoverageExplore(t *testing.T) {
	for _, link := range []Link{LinkLogit, LinkCloglog} {
		for _, eps := range []float64{0.5, 1} {
			cov, reps := 0, 40
			var w, ww float64
			for r := 0; r < reps; r++ {
				rng := rand.New(rand.NewPCG(uint64(r), 7))
				d := worldData(rng, 50000, link)
				res, err := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: link, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(uint64(r+100)))
				if err != nil {
					t.Fatal(err)
				}
				for j, b := range []float64{1, -1} {
					if res.BetaLower[j] <= b && b <= res.BetaUpper[j] {
						cov++
					}
					w += res.BetaUpper[j] - res.BetaLower[j]
				}
				if r < 5 {
					mle, _ := FitDiscrete(d, DiscreteOptions{Method: MethodMLE, Link: link, TimeMax: 1}, nil)
					info, _ := MeanInformation(d, DiscreteOptions{Method: MethodMLE, Link: link, TimeMax: 1}, append(append([]float64{}, mle.Alpha...), mle.Beta...))
					_ = info
					ww += 1
				}
			}
			t.Logf("%s eps %v: coverage %d/%d, mean width %.4f", link, eps, cov, 2*reps, w/float64(2*reps))
		}
	}
}
