package sanitize_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// BenchmarkProcess compares the per-message CPU cost of the sanitizing
// processor (decode, validate, sanitize, encode) with the Arrow passthrough
// (decode, re-encode) on 2000-record messages, without Kafka.
func BenchmarkProcess(b *testing.B) {
	mem := memory.NewGoAllocator()
	spec := schemas.Spec{Cohorts: []string{"A", "B", "C"}, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	d, _ := synth.Generate(synth.Options{N: 2000, Cohorts: spec.Cohorts, TimeMax: 3650, Seed: 1})
	msgs, err := harness.Messages(spec, d, 2000, mem)
	if err != nil {
		b.Fatal(err)
	}
	msg := message.Message{Topic: "t", Value: msgs[0].Value}
	v, _ := schemas.NewValidator(spec, mem)
	chain, err := sanitizers.New(sanitizers.Config{Key: bytes.Repeat([]byte{1}, 32), Cohorts: spec.Cohorts, TimeMax: 3650, TimeUnit: "days",
		PseudonymizeID: true, Time: sanitizers.TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10},
		Cohort: sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}, Public: []string{"event"}}, mem)
	if err != nil {
		b.Fatal(err)
	}
	defer chain.Release()
	procs := map[string]pipeline.Processor{
		"sanitize":    &sanitize.Processor{Validator: v, Chain: chain, Mem: mem, Metrics: sanitize.NewMetrics(prometheus.NewRegistry())},
		"passthrough": sanitize.Passthrough{Mem: mem},
	}
	ctx := context.Background()
	for _, name := range []string{"passthrough", "sanitize"} {
		p := procs[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Process(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*2000/b.Elapsed().Seconds(), "records/s")
		})
	}
}
