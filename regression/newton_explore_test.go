package regression

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

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

func mleWald(t *testing.T, d Data, link Link) (DiscreteResult, []float64) {
	mle, err := FitDiscrete(d, DiscreteOptions{Method: MethodMLE, Link: link, TimeMax: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := append(append([]float64{}, mle.Alpha...), mle.Beta...)
	info, _ := MeanInformation(d, DiscreteOptions{Method: MethodMLE, Link: link, TimeMax: 1}, f)
	k := len(f)
	var inv mat.Dense
	if err := inv.Inverse(mat.NewDense(k, k, info)); err != nil {
		t.Fatal(err)
	}
	se := make([]float64, k)
	for j := range se {
		se[j] = math.Sqrt(inv.At(j, j) / float64(d.Len()))
	}
	return mle, se
}

func TestNewtonClipStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, link := range []Link{LinkLogit, LinkCloglog} {
		d := worldData(rng, 50000, link)
		pr, _ := prepareDiscrete(d, &DiscreteOptions{Method: MethodNewton, Link: link, TimeMax: 1})
		mle, se := mleWald(t, d, link)
		f := append(append([]float64{}, mle.Alpha...), mle.Beta...)
		t.Logf("%s mle %v se %v", link, f, se)
		for _, c := range []float64{1e9, 8, 4, 2} {
			s := pr.m.clippedSums(f, [nBlocks]float64{c, c, c, c, c})
			t.Logf("clip %v: %v", c, s)
		}
	}
}

func TestNewtonCoverageExplore(t *testing.T) {
	reps, _ := strconv.Atoi(os.Getenv("REPS"))
	if reps == 0 {
		reps = 20
	}
	n := 50000
	if v, _ := strconv.Atoi(os.Getenv("NN")); v > 0 {
		n = v
	}
	for _, link := range []Link{LinkLogit, LinkCloglog} {
		for _, eps := range epsList() {
			cov, acov := 0, 0
			var w, ww, bias [2]float64
			var dt time.Duration
			for r := 0; r < reps; r++ {
				rng := rand.New(rand.NewPCG(uint64(r), 7))
				d := worldData(rng, n, link)
				t0 := time.Now()
				res, err := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: link, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(uint64(r+100)))
				dt += time.Since(t0)
				if err != nil {
					t.Fatal(err)
				}
				if res.BetaLower == nil {
					t.Logf("no intervals: %s", res.IntervalMethod)
					continue
				}
				mle, se := mleWald(t, d, link)
				for j, b := range []float64{1, -1} {
					if res.BetaLower[j] <= b && b <= res.BetaUpper[j] {
						cov++
					}
					w[j] += res.BetaUpper[j] - res.BetaLower[j]
					ww[j] += 2 * 1.96 * se[3+j]
					bias[j] += res.Beta[j] - mle.Beta[j]
				}
				for j := range res.Alpha {
					if res.AlphaLower[j] <= mle.Alpha[j] && mle.Alpha[j] <= res.AlphaUpper[j] {
						acov++ // vs the MLE (no true spline alpha): rough
					}
				}
			}
			t.Logf("%s eps %v: beta cov %d/%d, width %.4f %.4f, ratio %.2f %.2f, mean(newton-mle) %.4f %.4f, alpha-vs-mle cov %d/%d, %v/fit",
				link, eps, cov, 2*reps, w[0]/float64(reps), w[1]/float64(reps), w[0]/ww[0], w[1]/ww[1], bias[0]/float64(reps), bias[1]/float64(reps), acov, 3*reps, dt/time.Duration(reps))
		}
	}
}

func TestNewtonTrajectory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	d := worldData(rng, 50000, LinkLogit)
	mle, _ := mleWald(t, d, LinkLogit)
	t.Logf("mle %.4f %.4f", mle.Alpha, mle.Beta)
	for _, eps := range []float64{0.5, 1e6} {
		t0 := time.Now()
		res, err := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: LinkLogit, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(5))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("eps %v took %v", eps, time.Since(t0))
		for _, s := range res.NewtonSteps {
			t.Logf("  at %.4f", s.At)
		}
		t.Logf("  final %.4f %.4f se %.4f %.4f", res.Alpha, res.Beta, res.AlphaSE, res.BetaSE)
	}
}

func epsList() []float64 {
	if os.Getenv("EPS") == "all" {
		return []float64{0.5, 1, 2}
	}
	return []float64{0.5, 1}
}

func TestNewtonBiasExplore(t *testing.T) {
	reps := 12
	for _, eps := range []float64{0.5} {
		var m [4][2]float64
		for r := 0; r < reps; r++ {
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			d := worldData(rng, 50000, LinkLogit)
			res, _ := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: LinkLogit, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(uint64(r+100)))
			mle, _ := mleWald(t, d, LinkLogit)
			K := len(res.NewtonSteps)
			pts := [][]float64{res.NewtonSteps[K-3].At[3:], res.NewtonSteps[K-2].At[3:], res.NewtonSteps[K-1].At[3:], res.Beta}
			line := ""
			for i, pt := range pts {
				for j := range 2 {
					m[i][j] += (pt[j] - mle.Beta[j]) / float64(reps)
					line += strconv.FormatFloat(pt[j]-mle.Beta[j], 'f', 4, 64) + " "
				}
				line += "| "
			}
			t.Logf("rep %d: %s alpha %.3f mle %.3f", r, line, res.Alpha, mle.Alpha)
		}
		t.Logf("eps %v mean errors vs mle (K-2, K-1, K, final): %.4f", eps, m)
	}
}
