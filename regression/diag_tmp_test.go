package regression

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func TestDiagTmp(t *testing.T) {
	for _, eps := range []float64{2, 1} {
		var zt, zm, zs, ses, mses float64
		reps := 30
		for r := 0; r < reps; r++ {
			d := newtonWorld(rand.New(rand.NewPCG(uint64(r)+777, 7)), 50000, LinkLogit)
			res, _ := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: LinkLogit, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(uint64(r)+5))
			mle, se := mleWaldSE(t, d, LinkLogit)
			K := len(res.NewtonSteps)
			for j, b := range []float64{1, -1} {
				z1 := (res.Beta[j] - b) / res.BetaSE[j]
				z2 := (res.Beta[j] - mle.Beta[j]) / res.BetaSE[j]
				z3 := (res.NewtonSteps[K-1].At[3+j] - mle.Beta[j]) / se[3+j]
				zt += z1 * z1
				zm += z2 * z2
				zs += z3 * z3
				ses += res.BetaSE[j]
				mses += se[3+j]
			}
		}
		n := float64(2 * reps)
		t.Logf("eps %v: rms z vs truth %.2f, rms (newton-mle)/se %.2f, rms (last point - mle)/mle_se %.2f, mean se %.4f, mle se %.4f", eps, math.Sqrt(zt/n), math.Sqrt(zm/n), math.Sqrt(zs/n), ses/n, mses/n)
	}
}
