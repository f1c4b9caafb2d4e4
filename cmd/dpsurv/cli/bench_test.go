package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// The bench reports every CPU figure from one run, and the overhead ratio
// is the stated quotient of them. 10,000 records (5 batches of 2,000 over
// the 4 partitions) exercise every stage; the figures' sizes are
// BenchmarkStreamCPU's and `dpsurv bench`'s business (40,000 records here
// cost twice the CPU under -race for the same checks).
func TestBenchReportsCPUBreakdown(t *testing.T) {
	t.Parallel()
	res, err := Bench(context.Background(), 10000, 2000, 1, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{
		"passthrough": res.PassthroughCPUNsPerRecord, "validator": res.ValidatorCPUNsPerRecord,
		"chain": res.ChainCPUNsPerRecord, "pipeline": res.PipelineCPUNsPerRecord, "aes": res.AESBlockNs,
		"input bytes": res.InputBytesPerRecord, "sanitized bytes": res.SanitizedBytesPerRecord,
		"io passthrough": res.PassthroughIOCPUNsPerRecord, "io passthrough bytes": res.PassthroughIOBytesPerRecord,
	} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s: %v ns per record", name, v)
		}
	}
	want := res.PipelineCPUNsPerRecord / (res.PassthroughCPUNsPerRecord + res.ChainCPUNsPerRecord)
	if math.Abs(res.OverheadRatio-want) > 1e-12*want {
		t.Errorf("overhead ratio %v, want %v", res.OverheadRatio, want)
	}
	wantIO := res.PipelineCPUNsPerRecord / (res.PassthroughIOCPUNsPerRecord + res.ChainCPUNsPerRecord)
	if math.Abs(res.OverheadRatioIO-wantIO) > 1e-12*wantIO {
		t.Errorf("io overhead ratio %v, want %v", res.OverheadRatioIO, wantIO)
	}
	// The io passthrough publishes what the pipeline publishes, byte for
	// byte within 2 % (it is more than the input: else the mode is moot).
	if r := res.PassthroughIOBytesPerRecord / res.SanitizedBytesPerRecord; math.Abs(r-1) > 0.02 || res.PassthroughIOBytesPerRecord < 1.5*res.InputBytesPerRecord {
		t.Errorf("io passthrough publishes %.2f bytes per record, the pipeline %.2f, the input is %.2f",
			res.PassthroughIOBytesPerRecord, res.SanitizedBytesPerRecord, res.InputBytesPerRecord)
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
	b.ReportMetric(res.PassthroughIOCPUNsPerRecord, "passthrough-io-ns/record")
	b.ReportMetric(res.OverheadRatioIO, "overhead-ratio-io")
	b.ReportMetric(res.PassthroughIOBytesPerRecord, "passthrough-io-B/record")
	b.ReportMetric(res.ChainRecordsPerCPUSecond/1e6, "chain-M-records/cpu-s")
	b.ReportMetric(res.AESBlockNs, "aes-ns/block")
	b.ReportMetric(res.InputBytesPerRecord, "input-B/record")
	b.ReportMetric(res.SanitizedBytesPerRecord, "sanitized-B/record")
}

// The io passthrough publishes, message for message, as many records and
// as many bytes as the sanitizing pipeline (within 2 %, the pseudonyms and
// the noisy times being fixed-width), with the pipeline's key and header,
// for messages of the template's size and of fewer and more rows.
func TestIOPassthroughMatchesPipelineBytes(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cohorts := []string{"A", "B", "C"}
	cfg := demoConfig([]string{"127.0.0.1:1"}, cohorts, 3650)
	key := app.EphemeralKey()
	spec := cfg.Spec()
	for _, sizes := range [][]int{{2000, 2000, 2000}, {2000, 700, 1}, {500, 2000}} {
		var msgs []message.Message
		for i, n := range sizes {
			d, err := synth.Generate(synth.Options{N: n, Cohorts: cohorts, TimeMax: 3650, Seed: uint64(10 + i)})
			if err != nil {
				t.Fatal(err)
			}
			m, err := harness.Messages(spec, d, n, mem)
			if err != nil {
				t.Fatal(err)
			}
			for j := range m {
				m[j].Topic, m[j].Partition, m[j].Offset = "bench.in", i%4, int64(i)
			}
			msgs = append(msgs, m...)
		}
		iop, err := newIOPassthrough(cfg, key, msgs, mem)
		if err != nil {
			t.Fatal(err)
		}
		v, err := schemas.NewValidator(spec, mem)
		if err != nil {
			t.Fatal(err)
		}
		chain, err := sanitizers.New(cfg.SanitizerConfig(key), mem)
		if err != nil {
			t.Fatal(err)
		}
		pipe := &sanitize.Processor{Validator: v, Chain: chain, Mem: mem, Metrics: sanitize.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop()}
		var pipeBytes, ioBytes int
		ctx := context.Background()
		rows := func(rs []pipeline.Routed) (n, dead int) {
			for _, r := range rs {
				n += r.Rows
				if r.Route != sanitize.RouteOutput {
					dead++
				}
			}
			return n, dead
		}
		for i, m := range msgs {
			want, err := pipe.Process(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := iop.Process(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			gotN, _ := rows(got)
			wantN, wantDead := rows(want)
			if gotN != wantN || len(got) != len(want) || wantDead > 0 {
				t.Fatalf("sizes %v, message %d: io passthrough %d records in %d messages, pipeline %d in %d (%d dead letters)",
					sizes, i, gotN, len(got), wantN, len(want), wantDead)
			}
			for j := range want {
				w, g := want[j].Msg, got[j].Msg
				if !bytes.Equal(w.Key, g.Key) || len(w.Headers) != len(g.Headers) || !bytes.Equal(w.Headers[0].Value, g.Headers[0].Value) {
					t.Errorf("sizes %v, message %d: key/header %q %v, pipeline %q %v", sizes, i, g.Key, g.Headers, w.Key, w.Headers)
				}
				pipeBytes += len(w.Value)
				ioBytes += len(g.Value)
			}
		}
		t.Logf("sizes %v: io passthrough %d bytes, pipeline %d", sizes, ioBytes, pipeBytes)
		if r := float64(ioBytes) / float64(pipeBytes); math.Abs(r-1) > 0.02 {
			t.Errorf("sizes %v: io passthrough published %d bytes, the pipeline %d (ratio %.4f)", sizes, ioBytes, pipeBytes, r)
		}
		if got, want := iop.bytes.Load(), int64(ioBytes); got != want {
			t.Errorf("sizes %v: io passthrough counted %d bytes, published %d", sizes, got, want)
		}
		chain.Release()
		iop.release()
	}
	mem.AssertSize(t, 0)
}

// A subset of the modes (DPSURV_BENCH_MODES) leaves the figures of the
// others, and the ratios over them, at zero: never an infinite ratio that
// --json could not print.
func TestBenchModesSubset(t *testing.T) {
	t.Setenv("DPSURV_BENCH_MODES", "io,pipe")
	res, err := Bench(context.Background(), 20000, 2000, 1, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("json: %v", err)
	}
	if res.PassthroughCPUNsPerRecord != 0 || res.OverheadRatio != 0 || res.Ratio != 0 || res.RawRatio != 0 {
		t.Errorf("figures of modes not run: %+v", res)
	}
	if !(res.OverheadRatioIO > 0) || !(res.PassthroughIOBytesPerRecord > 0) {
		t.Errorf("io figures missing: %+v", res)
	}
}
