package ops_test

import (
	"context"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/processors/sanitize"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// streamMaxInFlight is the most batches a Stream holds between reading and
// acknowledging them: one in the reader (blocked on a full channel), two
// queued for processing, one being processed, two queued for writing, one
// being written. A slow sink therefore holds the backlog in Kafka, not in
// the service's memory.
const streamMaxInFlight = 7

// TestOpsSlowSinkBackpressure runs the stream into a slow sink, with and
// without failures after partial writes: nothing is lost, redelivered
// messages are byte-identical, writes stay serial, and the batches read but
// not yet acknowledged never exceed the stream's fixed bound, while the
// rest of the input waits in the broker (consumer lag).
func TestOpsSlowSinkBackpressure(t *testing.T) {
	testtier.Full(t, "backpressure fault test")
	tests := []struct {
		name      string
		delay     time.Duration
		failEvery int
	}{
		{name: "slow", delay: 10 * time.Millisecond},
		{name: "slow with partial-write failures", delay: 5 * time.Millisecond, failEvery: 5},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			t.Cleanup(cancel)
			_, conn := brokertest.Start(t, broker.Options{Partitions: 4})
			conn.ClientID = "ops-slow"
			cfg := opsConfig(conn, "ops-slow")
			const maxBatch = 2
			opsEnsureTopics(t, ctx, conn, cfg)
			in := opsNewInput(t, cfg, opsKey, 3000, 25, uint64(30+i), "slow")
			if err := harness.Produce(ctx, conn, cfg.Input.Topic, in.msgs, nil); err != nil {
				t.Fatal(err)
			}

			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			src, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: cfg.Input.Topic, GroupID: cfg.Input.GroupID, MaxBatch: maxBatch}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = src.Close() })
			tracked := &ops.TrackedSource{Source: src}
			out, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: cfg.Output.SanitizedTopic}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = out.Close() })
			dead, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: cfg.Output.DeadLetterTopic}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = dead.Close() })
			slow := &ops.SlowSink{Sink: out, Delay: tc.delay, Jitter: tc.delay, FailEvery: tc.failEvery, Src: dp.NewSeededSource(uint64(40 + i))}
			v, err := schemas.NewValidator(cfg.Spec(), mem)
			if err != nil {
				t.Fatal(err)
			}
			chain, err := sanitizers.New(cfg.SanitizerConfig(opsKey), mem)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(chain.Release)
			m := pipeline.NewMetrics(prometheus.NewRegistry())
			st := &pipeline.Stream{Source: tracked, Metrics: m, Log: zap.NewNop(), Lag: src.Lag,
				Routes:    map[string]message.Sink{sanitize.RouteOutput: slow, sanitize.RouteDeadLetter: dead},
				Failures:  sanitize.DeadLetters{},
				Processor: &sanitize.Processor{Validator: v, Chain: chain, Mem: mem, Metrics: sanitize.NewMetrics(nil), Format: "arrow", Log: zap.NewNop()}}
			sctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- st.Run(sctx) }()

			// While it runs: the in-flight bound holds and the backlog
			// waits in the broker.
			maxLag := 0.0
			finished := harness.WaitFor(ctx, 40*time.Second, func() bool {
				maxLag = max(maxLag, pipelinetest.Value(m.ConsumerLag))
				return st.Acked() >= int64(len(in.msgs))
			})
			elapsed := time.Since(start)
			if !finished {
				t.Fatalf("acked %d of %d messages", st.Acked(), len(in.msgs))
			}
			res := opsCollectExact(t, ctx, conn, cfg.Output.SanitizedTopic, "ops-slow-reader", in.want)
			stop()
			if err := <-done; err != nil {
				t.Fatalf("stream: %v", err)
			}
			ss, sk := tracked.Stats(), slow.Stats()
			t.Logf("%v for %d messages; sink writes %d (failed %d); max in flight %d batches / %d messages; max lag %.0f; %d redelivered (identical)",
				elapsed.Round(time.Millisecond), len(in.msgs), sk.Writes, sk.Failures, ss.MaxInFlightBatches, ss.MaxInFlightMessages, maxLag, res.Duplicates)
			if ss.MaxInFlightBatches > streamMaxInFlight || ss.MaxInFlightMessages > streamMaxInFlight*maxBatch {
				t.Errorf("in flight up to %d batches / %d messages, bound is %d / %d",
					ss.MaxInFlightBatches, ss.MaxInFlightMessages, streamMaxInFlight, streamMaxInFlight*maxBatch)
			}
			if ss.MaxInFlightBatches < 3 {
				t.Errorf("at most %d batches in flight: the slow sink did not hold the pipeline back", ss.MaxInFlightBatches)
			}
			if sk.MaxConcurrent != 1 {
				t.Errorf("%d concurrent writes to the sanitized sink, want 1 (ordered)", sk.MaxConcurrent)
			}
			if maxLag < float64(len(in.msgs)/2) {
				t.Errorf("max consumer lag %.0f: the backlog (%d messages) should wait in the broker", maxLag, len(in.msgs))
			}
			if minTime := time.Duration(sk.Writes) * tc.delay; elapsed < minTime {
				t.Errorf("finished in %v, faster than the sink allows (%v)", elapsed, minTime)
			}
			errs := pipelinetest.Value(m.SinkErrors.WithLabelValues("output"))
			if tc.failEvery > 0 {
				if sk.Failures == 0 || res.Duplicates == 0 || int(errs) != sk.Failures {
					t.Errorf("failures %d, duplicates %d, sink error metric %.0f: want failures, duplicates, and the metric counting them",
						sk.Failures, res.Duplicates, errs)
				}
			} else if res.Duplicates != 0 || errs != 0 {
				t.Errorf("%d duplicates and %.0f sink errors without failures", res.Duplicates, errs)
			}
			chain.Release()
			mem.AssertSize(t, 0)
		})
	}
}
