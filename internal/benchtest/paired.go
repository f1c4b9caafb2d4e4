package benchtest

import (
	"testing"
	"time"
)

// PairedRatio runs exact, then private, b.N times and reports their mean
// wall and CPU times and the ratios: exact-ms/op and private-ms/op (wall),
// exact-cpu-ms/op and private-cpu-ms/op (the process's CPU while each ran)
// and the ratios private/exact (wall) and private/exact-cpu. The two run in
// turn in every iteration, so the ratio private ÷ non-private comes from
// one run and holds when the machine's speed drifts (issue 24: every
// private fit within 3x of its twin).
func PairedRatio(b *testing.B, exact, private func() error) {
	b.Helper()
	var wall, cpu [2]time.Duration
	for b.Loop() {
		for k, f := range []func() error{exact, private} {
			c0, t0 := ProcessCPU(), time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(t0)
			cpu[k] += time.Duration(ProcessCPU() - c0)
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
