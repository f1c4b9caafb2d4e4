package regression

import (
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/dp"
)

// pairedRatio runs exact, then private, b.N times and reports their mean
// wall and CPU times and the ratios private/exact (as dpfit's paired
// benchmarks do).
func pairedRatio(b *testing.B, exact, private func() error) {
	b.Helper()
	var wall, cpu [2]time.Duration
	for b.Loop() {
		for k, f := range []func() error{exact, private} {
			c0, t0 := processCPU(), time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(t0)
			cpu[k] += time.Duration(processCPU() - c0)
		}
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 / n }
	b.ReportMetric(ms(wall[0]), "exact-ms/op")
	b.ReportMetric(ms(wall[1]), "private-ms/op")
	b.ReportMetric(ms(cpu[0]), "exact-cpu-ms/op")
	b.ReportMetric(ms(cpu[1]), "private-cpu-ms/op")
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "private/exact")
	if cpu[0] > 0 {
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "private/exact-cpu")
	}
}

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
	pairedRatio(b, func() error {
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
