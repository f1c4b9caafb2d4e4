package weibull

import (
	"math"
	"sync"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/benchtest"
	"github.com/dpsurv/dpsurv/survival"
)

// The benchmark window: 1 million records on 5000 distinct integer days
// (T_max = 5000), about 30% events, drawn from a seeded source.
var weibullBench struct {
	once  sync.Once
	time  []float64
	event []bool
	c     survival.Compressed
}

func weibullBenchData() {
	weibullBench.once.Do(func() {
		const n = 1_000_000
		src := dp.NewSeededSource(99)
		weibullBench.time = make([]float64, n)
		weibullBench.event = make([]bool, n)
		for i := range weibullBench.time {
			weibullBench.time[i] = float64(1 + dp.Uint64n(src, 5000))
			weibullBench.event[i] = dp.Uint64n(src, 10) < 3
		}
		weibullBench.c = survival.Compress(weibullBench.time, weibullBench.event)
	})
}

// BenchmarkWeibullCompress1M: grouping 1M records by distinct time.
func BenchmarkWeibullCompress1M(b *testing.B) {
	weibullBenchData()
	for b.Loop() {
		survival.Compress(weibullBench.time, weibullBench.event)
	}
}

// BenchmarkWeibullLadder1M: the 500-rung LSP ladder on the compressed window.
func BenchmarkWeibullLadder1M(b *testing.B) {
	weibullBenchData()
	cfg := WeibullConfig{TimeMax: 5000}
	for b.Loop() {
		if _, err := ComputeWeibullLadder(weibullBench.c, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWeibullLSP1M: a whole LSP+TLL release from raw records
// (compression + ladder + rung draw + TLL).
func BenchmarkWeibullLSP1M(b *testing.B) {
	weibullBenchData()
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 5000}
	src := dp.NewSeededSource(1)
	for b.Loop() {
		c := survival.Compress(weibullBench.time, weibullBench.event)
		if _, err := FitWeibullLSP(src, c, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWeibullSAA1M: the sample-and-aggregate baseline (2000 blocks),
// for comparison; its cost is linear in records (a shuffle), not in
// distinct times.
func BenchmarkWeibullSAA1M(b *testing.B) {
	weibullBenchData()
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 5000}
	src := dp.NewSeededSource(1)
	for b.Loop() {
		if _, err := FitWeibullSAA(src, weibullBench.c, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWeibullMLE1M is the non-private twin of
// BenchmarkWeibullLSPIntervals1M: the exact maximum-likelihood fit
// (epsilon = inf) of the same window from raw records (compression + MLE).
func BenchmarkWeibullMLE1M(b *testing.B) {
	weibullBenchData()
	cfg := WeibullConfig{Epsilon: math.Inf(1), TimeMax: 5000}.WithDefaults()
	defer cpuPerOp(b)()
	for b.Loop() {
		c := survival.Compress(weibullBench.time, weibullBench.event)
		if _, err := FitWeibull(nil, c, cfg, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWeibullLSPIntervals1M: a private LSP+TLL release from raw
// records with its noise-aware shape and scale intervals at the defaults
// (WeibullIntervals: about 15 x 39 simulated releases). The simulation
// draws binned data sets whose cost follows the number of time cells, not
// the record count, so this stays within a small multiple of
// BenchmarkWeibullMLE1M (issue 19: at most 3x).
func BenchmarkWeibullLSPIntervals1M(b *testing.B) {
	weibullBenchData()
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 5000}
	src := dp.NewSeededSource(1)
	defer cpuPerOp(b)()
	for b.Loop() {
		c := survival.Compress(weibullBench.time, weibullBench.event)
		fit, err := FitWeibullLSP(src, c, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := WeibullIntervals(fit, WeibullIntervalOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuPerOp reports the process's CPU time (user + system) per iteration as
// cpu-ns/op, which a loaded machine inflates less than the wall time:
// call at the start, defer the returned function.
func cpuPerOp(b *testing.B) func() {
	start := benchtest.ProcessCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(benchtest.ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
