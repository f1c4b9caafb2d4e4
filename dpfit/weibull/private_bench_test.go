package weibull

import (
	"math"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// The private Weibull fit beside its non-private twin on the same 1 M records, run
// in turn in every iteration so that the ratio private ÷ non-private comes
// from one run and holds when the machine's speed drifts (issue 24: every
// private fit within 3x of its twin). Each reports exact-ms/op and
// private-ms/op (wall), exact-cpu-ms/op and private-cpu-ms/op (the
// process's CPU while each ran) and the ratios private/exact (wall) and
// private/exact-cpu. The data are generated here (nothing large is
// committed):
//
//	go test -run XXX -bench 'PrivateVsExact' -benchtime 3x ./dpfit/weibull

// pairedRatio (a copy of dpfit's, whose test files this package cannot
// import) runs exact, then private, b.N times and reports their mean
// wall and CPU times and the ratios.
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

// BenchmarkWeibullPrivateVsExact1M: the private Weibull release with its
// noise-aware shape and scale intervals (LSP + TLL, WeibullIntervals at
// the defaults) beside the non-private MLE, both from the records
// (compression included): the pair BenchmarkWeibullLSPIntervals1M and
// BenchmarkWeibullMLE1M time apart.
func BenchmarkWeibullPrivateVsExact1M(b *testing.B) {
	weibullBenchData()
	exactCfg := WeibullConfig{Epsilon: math.Inf(1), TimeMax: 5000}.WithDefaults()
	privCfg := WeibullConfig{Epsilon: 1, TimeMax: 5000}
	src := dp.NewSeededSource(1)
	exact := func() error {
		c := survival.Compress(weibullBench.time, weibullBench.event)
		_, err := FitWeibull(nil, c, exactCfg, "")
		return err
	}
	private := func() error {
		c := survival.Compress(weibullBench.time, weibullBench.event)
		fit, err := FitWeibullLSP(src, c, privCfg)
		if err != nil {
			return err
		}
		_, err = WeibullIntervals(fit, WeibullIntervalOptions{})
		return err
	}
	pairedRatio(b, exact, private)
}
