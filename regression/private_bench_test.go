package regression

import (
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/benchtest"
)

// BenchmarkDiscretePrivateVsExact1M: the default private release of
// `dpsurv fit discrete --epsilon 1` (noisy Newton with its limits, z and
// p) beside the non-private MLE with its Wald intervals (`--epsilon inf`),
// on the same 1 M records (cox1M: integer days up to 3650, age, female
// and bmi like `dpsurv gen --covariates 3`), q = 20, time max 3650, the
// bench's centre and scale; run in turn in every iteration, so the ratio
// private ÷ non-private comes from one run
// (`go test -run XXX -bench DiscretePrivateVsExact1M -benchtime 3x ./regression`).
// The MLE fits from sufficient statistics per (covariate pattern,
// interval) on such discrete covariates; the private release groups the
// records by pattern and merges those with the same last interval and
// event (newtonCompact), then sums its clipped terms per distinct record
// (clippedSumsPatterns).
func BenchmarkDiscretePrivateVsExact1M(b *testing.B) {
	data := cox1M()
	sc := Scaling{Centre: []float64{60, 0.5, 28}, Scale: []float64{40, 1, 20}}
	mle := DiscreteOptions{Method: MethodMLE, TimeMax: 3650, Intervals: 20, Scaling: sc}
	newton := DiscreteOptions{Method: MethodNewton, Epsilon: 1, TimeMax: 3650, Intervals: 20, Scaling: sc}
	src := dp.NewSeededSource(1)
	benchtest.PairedRatio(b, func() error {
		_, err := FitDiscrete(data, mle, nil)
		return err
	}, func() error {
		_, err := FitDiscrete(data, newton, src)
		return err
	})
}

// BenchmarkFitDiscreteMLE1M: the non-private fit of `dpsurv fit discrete
// --epsilon inf` on cox1M's records, q = 20 (5.4 M person-periods; the
// job of the R comparison in docs/performance.md, reading excluded).
func BenchmarkFitDiscreteMLE1M(b *testing.B) {
	data := cox1M()
	opts := DiscreteOptions{Method: MethodMLE, TimeMax: 3650, Intervals: 20,
		Scaling: Scaling{Centre: []float64{60, 0.5, 28}, Scale: []float64{40, 1, 20}}}
	for b.Loop() {
		if _, err := FitDiscrete(data, opts, nil); err != nil {
			b.Fatal(err)
		}
	}
}
