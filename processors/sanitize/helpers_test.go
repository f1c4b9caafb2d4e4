package sanitize_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// newArrowProcessor returns the sanitizing processor over the default
// columns (TE time at epsilon 0.5, RRR cohort at epsilon 1, pseudonymized
// ids, event public) and n synthetic records of the given cohorts drawn with
// seed, encoded as Arrow messages. Its allocator is checked: the test fails
// if anything the processor allocated is still held at cleanup.
func newArrowProcessor(t *testing.T, cohorts []string, n int, seed uint64) (*sanitize.Processor, []message.Message) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	spec := schemas.Spec{Cohorts: cohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	d, err := synth.Generate(synth.Options{N: n, Cohorts: spec.Cohorts, TimeMax: 3650, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := harness.Messages(spec, d, n, mem)
	if err != nil {
		t.Fatal(err)
	}
	v, err := schemas.NewValidator(spec, mem)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := sanitizers.New(sanitizers.Config{Key: bytes.Repeat([]byte{1}, 32), Cohorts: spec.Cohorts, TimeMax: 3650, TimeUnit: "days",
		PseudonymizeID: true, Time: sanitizers.TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10},
		Cohort: sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}, Public: []string{"event"}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(chain.Release)
	p := &sanitize.Processor{Validator: v, Chain: chain, Mem: mem, Format: "arrow",
		Metrics: sanitize.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop()}
	return p, msgs
}
