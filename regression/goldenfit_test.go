package regression

import (
	"sync"
	"testing"
)

// goldenFits holds one func() (DiscreteResult, error) per golden data set
// and link (sync.OnceValues): TestFitDiscreteGoldenR (coefficients, log
// likelihood) and TestDiscreteMLEWaldGoldenR (standard errors, Wald
// limits) check the same non-private fit against two R outputs, so it is
// computed once per test binary. The results are shared: read them only.
var goldenFits sync.Map

// goldenMLE returns the non-private discrete-time fit of golden data set g
// (its rows in data) with link, on g's public preprocessing.
func goldenMLE(t *testing.T, g golden, data Data, link Link) DiscreteResult {
	t.Helper()
	fit, _ := goldenFits.LoadOrStore(g.File+"/"+string(link), sync.OnceValues(func() (DiscreteResult, error) {
		return FitDiscrete(data, DiscreteOptions{
			Method: MethodMLE, Link: link, Intervals: g.Intervals, Knots: g.Knots,
			TimeMax: g.TimeMax, Scaling: Scaling{Centre: g.Centre, Scale: g.Scale},
			Covariates: g.Covariates,
		}, nil)
	}))
	res, err := fit.(func() (DiscreteResult, error))()
	if err != nil {
		t.Fatal(err)
	}
	return res
}
