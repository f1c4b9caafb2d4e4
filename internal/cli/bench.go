package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/internal/harness"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/synth"
)

// BenchResult is what `dpsurv bench --json` prints. Both figures come from
// the same run, on the same broker and the same input messages.
type BenchResult struct {
	PipelineRecordsPerS    float64 `json:"pipeline_records_per_s"`
	PassthroughRecordsPerS float64 `json:"passthrough_records_per_s"`
	Ratio                  float64 `json:"ratio"`
	// RawCopyRecordsPerS copies message bytes without decoding them: the
	// broker's and client's ceiling, for context.
	RawCopyRecordsPerS float64 `json:"raw_copy_records_per_s"`
	RawRatio           float64 `json:"raw_ratio"`
	// CPU cores the process used on average while each processor streamed
	// (its best round): how close to saturating the machine it ran.
	PipelineCPUCores    float64 `json:"pipeline_cpu_cores"`
	PassthroughCPUCores float64 `json:"passthrough_cpu_cores"`
	Records             int     `json:"records"`
	Messages            int     `json:"messages"`
	BatchRecords        int     `json:"batch_records"`
	Rounds              int     `json:"rounds"`
}

func runBench(ctx context.Context, env Env, args []string) error {
	fs := newFlags("bench", env)
	records := fs.Int("records", 400000, "records to stream in each round")
	batch := fs.Int("batch", 2000, "records per input message")
	rounds := fs.Int("rounds", 2, "rounds of (passthrough, pipeline); the best of each is reported")
	asJSON := fs.Bool("json", false, "print one JSON object")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run here")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *records < *batch || *batch < 1 || *rounds < 1 {
		fmt.Fprintln(env.Stderr, "dpsurv bench: need records >= batch >= 1 and rounds >= 1")
		return errUsage
	}
	res, err := Bench(ctx, *records, *batch, *rounds, zap.NewNop())
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(env.Stdout, string(b))
		return nil
	}
	fmt.Fprintf(env.Stdout, "records per round      %d in %d messages of %d\n", res.Records, res.Messages, res.BatchRecords)
	fmt.Fprintf(env.Stdout, "passthrough (Arrow)    %.0f records/s  (decode + re-encode the same batches)\n", res.PassthroughRecordsPerS)
	fmt.Fprintf(env.Stdout, "sanitizing pipeline    %.0f records/s  (decode, validate, sanitize, encode)\n", res.PipelineRecordsPerS)
	fmt.Fprintf(env.Stdout, "ratio                  %.3f\n", res.Ratio)
	fmt.Fprintf(env.Stdout, "raw byte copy          %.0f records/s  (no decoding; ratio %.3f)\n", res.RawCopyRecordsPerS, res.RawRatio)
	return nil
}

// Bench streams the same input through a passthrough and through the
// sanitizing pipeline on one embedded broker, alternating, and reports the
// best throughput of each.
func Bench(ctx context.Context, records, batch, rounds int, log *zap.Logger) (BenchResult, error) {
	mem := memory.DefaultAllocator
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", Partitions: 4, Logger: log})
	if err != nil {
		return BenchResult{}, fmt.Errorf("start broker: %w", err)
	}
	defer b.Close()
	cohorts := []string{"A", "B", "C"}
	cfg := demoConfig(b.Addrs(), cohorts, 3650)
	cfg.Input.Topic = "bench.in"
	cfg.Input.MaxBatch = benchMaxBatch()
	cfg.HTTP.Listen = ""
	cfg.Log.Level = "error"
	d, err := synth.Generate(synth.Options{N: records, Cohorts: cohorts, TimeMax: 3650, Seed: 99})
	if err != nil {
		return BenchResult{}, err
	}
	spec := cfg.Spec()
	msgs, err := harness.Messages(spec, d, batch, mem)
	if err != nil {
		return BenchResult{}, err
	}
	if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{cfg.Input.Topic: 4}, nil); err != nil {
		return BenchResult{}, err
	}
	if err := harness.Produce(ctx, cfg.Kafka, cfg.Input.Topic, msgs, log); err != nil {
		return BenchResult{}, err
	}
	key := pipeline.EphemeralKey()
	measure := func(round int, mode string) (float64, float64, error) {
		c := cfg
		name := mode
		c.Input.GroupID = fmt.Sprintf("bench-%s-%d", name, round)
		c.Output.SanitizedTopic = fmt.Sprintf("bench.out.%s.%d", name, round)
		c.Output.DeadLetterTopic = fmt.Sprintf("bench.dlq.%s.%d", name, round)
		svc := &pipeline.Service{Config: c, Key: key, Log: log, Mem: mem}
		switch mode {
		case "pass":
			svc.Processor = pipeline.PassthroughProcessor{Mem: mem}
		case "raw":
			svc.Processor = pipeline.PassthroughProcessor{Raw: true}
		}
		var start time.Time
		started := make(chan struct{})
		svc.OnReady = func() { start = time.Now(); close(started) }
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- svc.Run(rctx) }()
		select {
		case <-started:
		case err := <-errc:
			return 0, 0, fmt.Errorf("bench %s: %w", name, err)
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		cpu0 := processCPU()
		if !harness.WaitFor(ctx, 5*time.Minute, func() bool { return svc.Acked() >= int64(len(msgs)) }) {
			return 0, 0, fmt.Errorf("bench %s: timed out with %d of %d messages", name, svc.Acked(), len(msgs))
		}
		el := time.Since(start)
		cores := (processCPU() - cpu0).Seconds() / el.Seconds()
		cancel()
		if err := <-errc; err != nil {
			return 0, 0, fmt.Errorf("bench %s: %w", name, err)
		}
		return float64(records) / el.Seconds(), cores, nil
	}
	res := BenchResult{Records: records, Messages: len(msgs), BatchRecords: batch, Rounds: rounds}
	for r := range rounds {
		for _, mode := range benchModes() {
			v, cores, err := measure(r, mode)
			if err != nil {
				return res, err
			}
			switch mode {
			case "pass":
				if v > res.PassthroughRecordsPerS {
					res.PassthroughRecordsPerS, res.PassthroughCPUCores = v, cores
				}
			case "pipe":
				if v > res.PipelineRecordsPerS {
					res.PipelineRecordsPerS, res.PipelineCPUCores = v, cores
				}
			case "raw":
				res.RawCopyRecordsPerS = max(res.RawCopyRecordsPerS, v)
			}
		}
	}
	res.Ratio = res.PipelineRecordsPerS / res.PassthroughRecordsPerS
	res.RawRatio = res.PipelineRecordsPerS / res.RawCopyRecordsPerS
	return res, nil
}

// benchMaxBatch is the messages per stream batch (DPSURV_BENCH_MAX_BATCH for
// experiments; default 32).
func benchMaxBatch() int {
	if v, err := strconv.Atoi(os.Getenv("DPSURV_BENCH_MAX_BATCH")); err == nil && v > 0 {
		return v
	}
	return 32
}

// benchModes are the processors measured (DPSURV_BENCH_MODES, comma
// separated, for experiments; default all three).
func benchModes() []string {
	if v := splitList(os.Getenv("DPSURV_BENCH_MODES")); len(v) > 0 {
		return v
	}
	return []string{"pass", "pipe", "raw"}
}

// processCPU is the user+system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
