package regression

import (
	"fmt"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// bench50k is 50,000 synthetic records with 8 covariates on q = 200
// intervals (about 2.6 million person-periods, never materialised).
func bench50k() Data {
	beta := []float64{0.8, -0.5, 0.3, 0, 1.2, -1, 0.4, 0.2}
	return synthetic(dp.NewSeededSource(2024), 50000, 8, 200, -4.5, beta)
}

// BenchmarkFitDiscreteMLE50k: the non-private fit on 50,000 records, q = 200,
// 8 covariates (target: under 2 s).
func BenchmarkFitDiscreteMLE50k(b *testing.B) {
	data := bench50k()
	opts := DiscreteOptions{Method: MethodMLE, TimeMax: 1, Intervals: 200}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := FitDiscrete(data, opts, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPSGLDFlchain times pSGLD steps (minibatch 200) on flchain and
// reports steps/s; 250 data passes are 250 n / 200 = 8,155 steps, the
// paper's 250 "epochs" of n steps are 1,631,000 steps.
func BenchmarkPSGLDFlchain(b *testing.B) {
	g := loadGolden(b, "flchain")
	data := loadCSV(b, g.File, g.Covariates)
	opts := DiscreteOptions{Method: MethodPSGLD, TimeMax: g.TimeMax, Epsilon: 1,
		Scaling: Scaling{Centre: g.Centre, Scale: g.Scale}}
	pr, err := prepareDiscrete(data, &opts)
	if err != nil {
		b.Fatal(err)
	}
	const steps = 2000
	src := dp.NewSeededSource(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := samplePSGLD(pr.m, 1, PSGLDOptions{Steps: steps}, src, nil); err != nil {
			b.Fatal(err)
		}
	}
	sps := float64(steps*b.N) / b.Elapsed().Seconds()
	b.ReportMetric(sps, "steps/s")
	b.ReportMetric(float64(250*data.Len()/200)/sps, "s/250passes")
	b.ReportMetric(float64(250*data.Len())/sps, "s/250paper-epochs")
}

// cox1M is 1,000,000 records with integer times (many ties) and 3
// covariates, like `dpsurv gen --n 1000000 --covariates 3`.
func cox1M() Data {
	src := dp.NewSeededSource(7)
	n := 1000000
	d := Data{Time: make([]float64, n), Event: make([]bool, n), X: make([][]float64, n)}
	flat := make([]float64, 3*n)
	for i := range n {
		age := float64(40 + dp.Uint64n(src, 40))
		female := float64(dp.Uint64n(src, 2))
		bmi := float64(180+dp.Uint64n(src, 200)) / 10
		d.Time[i] = float64(1 + dp.Uint64n(src, 3650))
		d.Event[i] = dp.Uint64n(src, 4) != 0
		d.X[i] = flat[3*i : 3*i+3 : 3*i+3]
		d.X[i][0], d.X[i][1], d.X[i][2] = age, female, bmi
	}
	return d
}

// BenchmarkCoxEfron1M: Cox PH (Efron ties) on 1,000,000 records, 3
// covariates: one sort, then a few linear passes per Newton step.
func BenchmarkCoxEfron1M(b *testing.B) {
	data := cox1M()
	for b.Loop() {
		if _, err := FitCox(data, CoxOptions{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitDiscreteNewton50k: the default private release (noisy
// Newton, epsilon 1) on the data of BenchmarkFitDiscreteMLE50k; issue 20's
// target: at most 3x the non-private fit's time (compare the two ns/op).
func BenchmarkFitDiscreteNewton50k(b *testing.B) {
	data := bench50k()
	opts := DiscreteOptions{Method: MethodNewton, Epsilon: 1, TimeMax: 1, Intervals: 200}
	src := dp.NewSeededSource(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := FitDiscrete(data, opts, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCoefficientIntervals: the 2,000-simulation parametric bootstrap
// of one Ext-Out-Pert release (5,000 records, 2 covariates, 20 intervals:
// 22 coefficients) and of a small one (3 intervals: 5 coefficients).
func BenchmarkCoefficientIntervals(b *testing.B) {
	for _, q := range []int{3, 20} {
		src := dp.NewSeededSource(43)
		data := synthetic(src, 5000, 2, q, -2, []float64{1, -1})
		res, err := FitDiscrete(data, DiscreteOptions{Method: MethodOutput, Epsilon: 1, TimeMax: 1, Intervals: q, IntervalFraction: 0.5}, src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("q=%d", q), func(b *testing.B) {
			for b.Loop() {
				if _, lo, _, _, err := CoefficientIntervals(res, 0.95, 0); err != nil || lo == nil {
					b.Fatal(err)
				}
			}
		})
	}
}
