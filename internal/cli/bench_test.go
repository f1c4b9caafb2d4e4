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
