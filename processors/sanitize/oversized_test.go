package sanitize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/processors/sanitize"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/sinks"
)

// limitSink refuses (sinks.ErrTooLarge) every message over max bytes, as
// a broker whose topic max.message.bytes is below output.max_message_bytes
// does, and keeps the rest.
type limitSink struct {
	max  int
	mu   sync.Mutex
	msgs []message.Message
}

func (l *limitSink) Write(_ context.Context, msgs []message.Message) error {
	for _, m := range msgs {
		if len(m.Key)+len(m.Value) > l.max {
			return fmt.Errorf("produce: %w", sinks.ErrTooLarge)
		}
	}
	l.mu.Lock()
	l.msgs = append(l.msgs, msgs...)
	l.mu.Unlock()
	return nil
}

func (l *limitSink) Close() error { return nil }

func (l *limitSink) Connect(context.Context) error { return nil }

// oneBatchSource returns one batch, then stops the stream.
type oneBatchSource struct {
	msgs  []message.Message
	acked chan struct{}
	done  bool
}

func (s *oneBatchSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	if s.done {
		<-ctx.Done()
		return message.Batch{}, ctx.Err()
	}
	s.done = true
	return message.Batch{Messages: s.msgs, Ack: func(context.Context) error { close(s.acked); return nil }}, nil
}

func (s *oneBatchSource) Close() error { return nil }

func (s *oneBatchSource) Connect(context.Context) error { return nil }

// Defect 1: a message the broker refuses for its size was retried forever.
// Now an output the sink refuses as too large becomes a dead letter
// (output_too_large, a reference to the source), a dead letter the sink
// refuses becomes a reference, and the batch is acknowledged.
func TestStreamTooLargeForTheBrokerIsDeadLettered(t *testing.T) {
	mem := memory.NewGoAllocator()
	cfg := app.DefaultConfig()
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: pipelinetest.Cohorts, Public: []string{"event"}}
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	v, err := schemas.NewValidator(cfg.Spec(), mem)
	if err != nil {
		t.Fatal(err)
	}
	v.SetMaxDeadRows(sanitize.DefaultMaxDeadRows)
	chain, err := sanitizers.New(cfg.SanitizerConfig(pipelinetest.Key), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Release()
	m := sanitize.NewMetrics(prometheus.NewRegistry())
	proc := &sanitize.Processor{Validator: v, Chain: chain, Mem: mem, Metrics: m}
	// 2,000 good rows (about 100 KB sanitized) and an undecodable 300 KB
	// message: both exceed the sinks' 64 KB limit.
	src := &oneBatchSource{acked: make(chan struct{}), msgs: []message.Message{
		{Topic: "in", Offset: 0, Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("big-", 2000), false)},
		{Topic: "in", Offset: 1, Value: bytes.Repeat([]byte("z"), 300_000)},
	}}
	out, dead := &limitSink{max: 64 << 10}, &limitSink{max: 64 << 10}
	st := &pipeline.Stream{Source: src, Processor: proc, Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop(),
		Routes:   map[string]message.Sink{sanitize.RouteOutput: out, sanitize.RouteDeadLetter: dead},
		Failures: sanitize.DeadLetters{}, OnAck: m.Acked}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- st.Run(ctx) }()
	select {
	case <-src.acked:
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatalf("batch not acknowledged: the too-large writes are retried (%v)", <-errc)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, d := range dead.msgs {
		var x pipelinetest.DeadLetterJSON
		if err := json.Unmarshal(d.Value, &x); err != nil {
			t.Fatal(err)
		}
		reasons[x.Reason] += max(x.Count, 1)
	}
	if reasons[sanitize.ReasonOutputTooLarge] != 2000 || reasons[schemas.ReasonUndecodable] != 1 || len(out.msgs) != 0 {
		t.Errorf("dead letters by reason %v, outputs %d; want 2000 output_too_large rows and 1 undecodable", reasons, len(out.msgs))
	}
	in, o, d := pipelinetest.Value(m.RecordsIn), pipelinetest.Value(m.RecordsOut), pipelinetest.Value(m.DeadLetterRows)
	if in != 2000 || o != 0 || d != 2000 {
		t.Errorf("records in %v, out %v, dead-letter rows %v", in, o, d)
	}
}

// A single sanitized record larger than the message limit (a public site
// of 40 KB with a 16 KiB limit) cannot be split: it is dead-lettered as
// output_too_large and the other records of its message go out.
func TestProcessorOversizedRecord(t *testing.T) {
	mem := memory.NewGoAllocator()
	cfg := app.DefaultConfig()
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: pipelinetest.Cohorts, Public: []string{"event", "site"}}
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	v, err := schemas.NewValidator(cfg.Spec(), mem)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := sanitizers.New(cfg.SanitizerConfig(pipelinetest.Key), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Release()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "time", Type: arrow.PrimitiveTypes.Float64},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean}, {Name: "cohort", Type: arrow.BinaryTypes.String},
		{Name: "site", Type: arrow.BinaryTypes.String}}, nil))
	defer b.Release()
	for i, site := range []string{"north", strings.Repeat("s", 40_000), "south"} {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprint("p", i))
		b.Field(1).(*array.Float64Builder).Append(10)
		b.Field(2).(*array.BooleanBuilder).Append(true)
		b.Field(3).(*array.StringBuilder).Append(pipelinetest.Cohorts[0])
		b.Field(4).(*array.StringBuilder).Append(site)
	}
	rec := b.NewRecord()
	defer rec.Release()
	val, err := arrowipc.Encode(rec, mem)
	if err != nil {
		t.Fatal(err)
	}
	p := &sanitize.Processor{Validator: v, Chain: chain, Mem: mem, Metrics: sanitize.NewMetrics(nil), MaxMessageBytes: 16 << 10}
	res, err := process(p, message.Message{Topic: "in", Value: val})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkResult(res, 16<<10); err != nil {
		t.Fatal(err)
	}
	if res.Records != 2 || len(res.DeadInfo) != 1 || res.DeadInfo[0].Reason != sanitize.ReasonOutputTooLarge || res.DeadInfo[0].Rows != 1 {
		t.Fatalf("records %d, dead %+v; want 2 out and one output_too_large row", res.Records, res.DeadInfo)
	}
}
