package ops

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
)

// MemSample is one reading of the process's memory.
type MemSample struct {
	// At is the time since the run started, in seconds.
	At float64 `json:"t_s"`
	// HeapInuseMiB is runtime.MemStats.HeapInuse: spans in use, including
	// garbage not yet collected.
	HeapInuseMiB float64 `json:"heap_inuse_mib"`
	// HeapLiveMiB is the heap the last GC found reachable
	// (/gc/heap/live:bytes): the steadier signal for growth.
	HeapLiveMiB float64 `json:"heap_live_mib"`
	// SysMiB is memory obtained from the OS.
	SysMiB     float64 `json:"sys_mib"`
	Goroutines int     `json:"goroutines"`
	// Records is the cumulative count of sanitized records received.
	Records int64 `json:"records"`
	// P99Ms is the 99th-percentile end-to-end latency of the records
	// received since the previous sample (0 when none).
	P99Ms float64 `json:"p99_ms"`
}

const mib = 1 << 20

// ReadMem takes one sample (At, Records and P99Ms are left zero).
func ReadMem() MemSample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	live := 0.0
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = float64(s[0].Value.Uint64()) / mib
	}
	return MemSample{
		HeapInuseMiB: float64(ms.HeapInuse) / mib,
		HeapLiveMiB:  live,
		SysMiB:       float64(ms.Sys) / mib,
		Goroutines:   runtime.NumGoroutine(),
	}
}

// Growth compares the live heap late in a run with the live heap in its
// middle. Samples in the first quarter (warm-up: connections, buffers,
// the broker's first segments) are ignored.
type Growth struct {
	// MiddleMiB is the median live heap of the second quarter of the
	// samples, LateMiB that of the last quarter.
	MiddleMiB float64 `json:"middle_mib"`
	LateMiB   float64 `json:"late_mib"`
	// Relative is (LateMiB - MiddleMiB) / MiddleMiB.
	Relative float64 `json:"relative"`
	// Flagged is set when the live heap grew by more than both
	// GrowthRelative and GrowthAbsMiB.
	Flagged bool `json:"flagged"`
	// Verdict says it in words.
	Verdict string `json:"verdict"`
}

// Thresholds for Growth.Flagged: a rise must exceed both to count, so
// that GC timing on a small heap does not raise an alarm.
const (
	GrowthRelative = 0.25
	GrowthAbsMiB   = 16.0
	// MinGrowthSamples is the fewest samples a verdict needs.
	MinGrowthSamples = 8
)

// AnalyzeGrowth computes the growth verdict of a run's samples.
func AnalyzeGrowth(samples []MemSample) Growth {
	n := len(samples)
	if n < MinGrowthSamples {
		return Growth{Verdict: fmt.Sprintf("too few samples (%d < %d) to judge growth", n, MinGrowthSamples)}
	}
	med := func(lo, hi int) float64 {
		v := make([]float64, 0, hi-lo)
		for _, s := range samples[lo:hi] {
			v = append(v, s.HeapLiveMiB)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	q := n / 4
	g := Growth{MiddleMiB: med(q, 2*q), LateMiB: med(n-q, n)}
	if g.MiddleMiB > 0 {
		g.Relative = (g.LateMiB - g.MiddleMiB) / g.MiddleMiB
	}
	rise := g.LateMiB - g.MiddleMiB
	g.Flagged = g.Relative > GrowthRelative && rise > GrowthAbsMiB
	if g.Flagged {
		g.Verdict = fmt.Sprintf("GROWTH: live heap rose from %.1f to %.1f MiB (+%.0f%%) between the middle and the end of the run",
			g.MiddleMiB, g.LateMiB, 100*g.Relative)
	} else {
		g.Verdict = fmt.Sprintf("no growth: live heap %.1f MiB in the middle, %.1f MiB at the end (%+.0f%%; flagged above +%.0f%% and +%.0f MiB)",
			g.MiddleMiB, g.LateMiB, 100*g.Relative, 100*GrowthRelative, GrowthAbsMiB)
	}
	return g
}
