package cli

import (
	"context"
	"math"
	"testing"

	"go.uber.org/zap"
)

// The bench reports every CPU figure from one run, and the overhead ratio
// is the stated quotient of them.
func TestBenchReportsCPUBreakdown(t *testing.T) {
	t.Parallel()
	res, err := Bench(context.Background(), 40000, 2000, 1, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{
		"passthrough": res.PassthroughCPUNsPerRecord, "validator": res.ValidatorCPUNsPerRecord,
		"chain": res.ChainCPUNsPerRecord, "pipeline": res.PipelineCPUNsPerRecord, "aes": res.AESBlockNs,
		"input bytes": res.InputBytesPerRecord, "sanitized bytes": res.SanitizedBytesPerRecord,
	} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s: %v ns per record", name, v)
		}
	}
	want := res.PipelineCPUNsPerRecord / (res.PassthroughCPUNsPerRecord + res.ChainCPUNsPerRecord)
	if math.Abs(res.OverheadRatio-want) > 1e-12*want {
		t.Errorf("overhead ratio %v, want %v", res.OverheadRatio, want)
	}
	if math.Abs(res.ChainRecordsPerCPUSecond*res.ChainCPUNsPerRecord-1e9) > 1 ||
		math.Abs(res.ChainInAESBlocks*res.AESBlockNs-res.ChainCPUNsPerRecord) > 1e-9*res.ChainCPUNsPerRecord {
		t.Errorf("derived figures inconsistent: %+v", res)
	}
}

// BenchmarkStreamCPU is `dpsurv bench` in the benchmark suite: 200,000
// records through the embedded broker, one round, CPU per record of each
// stage, the overhead ratio (target <= 1.15) and the chain's records per
// CPU second (target >= 4 M).
func BenchmarkStreamCPU(b *testing.B) {
	var res BenchResult
	for b.Loop() {
		var err error
		if res, err = Bench(context.Background(), 200000, 2000, 1, zap.NewNop()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(res.PassthroughCPUNsPerRecord, "passthrough-ns/record")
	b.ReportMetric(res.ValidatorCPUNsPerRecord, "validator-ns/record")
	b.ReportMetric(res.ChainCPUNsPerRecord, "chain-ns/record")
	b.ReportMetric(res.PipelineCPUNsPerRecord, "pipeline-ns/record")
	b.ReportMetric(res.OverheadRatio, "overhead-ratio")
	b.ReportMetric(res.ChainRecordsPerCPUSecond/1e6, "chain-M-records/cpu-s")
	b.ReportMetric(res.AESBlockNs, "aes-ns/block")
	b.ReportMetric(res.InputBytesPerRecord, "input-B/record")
	b.ReportMetric(res.SanitizedBytesPerRecord, "sanitized-B/record")
}
