package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/buildinfo"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/retry"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// Service is `dpsurv run`: the stream from the configured input topic to
// the sanitized and dead-letter topics, with metrics and health endpoints.
type Service struct {
	Config   Config
	Key      []byte
	Log      *zap.Logger
	Registry *prometheus.Registry
	Mem      memory.Allocator
	// Transport opens the sources and sinks (nil: KafkaTransport on
	// Config). The Kafka administration around them (connection check,
	// topics, group lag, the lease, the Kafka ledger) uses Config.Kafka.
	Transport Transport
	// Processor replaces the sanitizing processor (nil: the
	// sanitize.Processor of Config); `dpsurv bench` runs the
	// passthrough through the same service to measure the sanitizer's
	// cost.
	Processor pipeline.Processor
	// Clock drives the aggregators' windows (nil: the wall clock).
	Clock aggregators.Clock
	// StallClock is what input.stall_timeout is measured on (nil: the wall
	// clock); a test moves it to reach a stall without waiting one out.
	StallClock aggregators.Clock
	// AggregatorTick is how often the aggregators check the clock (0:
	// pipeline.DefaultAggregatorTick).
	AggregatorTick time.Duration
	// RetryBackoff is the first wait of the start-up retries (the Kafka
	// connection, the topics, the aggregators' start) after a failure (0:
	// 500 ms, 1 s for the topics); each wait doubles up to 30 s.
	RetryBackoff time.Duration
	// LogLevel is the level of Log, if it is adjustable: Reload (SIGHUP)
	// changes it.
	LogLevel *zap.AtomicLevel

	reload reloadState // reload.go

	statementOnce sync.Once     // statement_publish.go
	statementCh   chan struct{} // a reload changed the statement

	health  atomic.Pointer[HealthServer]
	stream  atomic.Pointer[pipeline.Stream] // set by Run, read by the health server
	chain   *sanitizers.Chain
	metrics atomic.Pointer[pipeline.Metrics]
	records atomic.Pointer[sanitize.Metrics]
	agg     atomic.Pointer[pipeline.AggregatorRunner]
	leader  atomic.Bool // this process holds the aggregator lease
	lag     atomic.Pointer[lagMonitor]
}

// Guarantees builds the sanitizer chain for cfg and key and returns the
// per-field guarantees; it is what --dry-run prints.
func Guarantees(cfg Config, key []byte) ([]sanitizers.Guarantee, error) {
	ch, err := sanitizers.New(cfg.SanitizerConfig(key), memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer ch.Release()
	return ch.Guarantees(), nil
}

// Spec is the schemas.Spec for the configured input (see inputSpec).
func (c Config) Spec() schemas.Spec { return c.inputSpec() }

// topicBatchOverhead is subtracted from a topic's max.message.bytes (which
// bounds a whole record batch) to bound one message.
const topicBatchOverhead = 1024

// maxMessageBytes is output.max_message_bytes or its default.
func (c Config) maxMessageBytes() int {
	if c.Output.MaxMessageBytes > 0 {
		return c.Output.MaxMessageBytes
	}
	return sanitize.DefaultMaxMessageBytes
}

// Ready reports readiness for /readyz: the stream is consuming and, when
// aggregators are configured, so are they.
func (s *Service) Ready() bool {
	if st := s.stream.Load(); st == nil || !st.Ready() {
		return false
	}
	if l := s.lag.Load(); l != nil && l.Stalled() > 0 {
		return false // a partition nobody consumes (this replica or another)
	}
	if s.leader.Load() {
		// A standby replica (no lease) is ready: it sanitizes.
		r := s.agg.Load()
		return r != nil && r.Ready()
	}
	return true
}

// AggregatorLeader reports whether this process runs the aggregators now.
func (s *Service) AggregatorLeader() bool { return s.leader.Load() }

// HealthAddr is the health server's address once Run has started it.
func (s *Service) HealthAddr() string {
	h := s.health.Load()
	if h == nil {
		return ""
	}
	return h.Addr()
}

// Acked is the number of input messages processed and committed so far.
func (s *Service) Acked() int64 {
	st := s.stream.Load()
	if st == nil {
		return 0
	}
	return st.Acked()
}

// transport is s.Transport or the Kafka one.
func (s *Service) transport() Transport {
	if s.Transport != nil {
		return s.Transport
	}
	return KafkaTransport{Config: s.Config, Log: s.Log}
}

// Metrics returns the service metrics (after Run started).
func (s *Service) Metrics() *pipeline.Metrics { return s.metrics.Load() }

// RecordMetrics returns the sanitizing processor's record accounting
// (after Run started).
func (s *Service) RecordMetrics() *sanitize.Metrics { return s.records.Load() }

// Run starts sinks first and the source last, runs until ctx is cancelled,
// then stops in reverse order after draining. A broker that refuses the
// connection or the credentials leaves the service running but not ready,
// retrying with backoff, rather than crash-looping.
func (s *Service) Run(ctx context.Context) error {
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	if s.Registry == nil {
		s.Registry = prometheus.NewRegistry()
		s.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if s.Mem == nil {
		s.Mem = memory.DefaultAllocator
	}
	cfg := s.Config
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := buildinfo.Register(s.Registry); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	m, sm := pipeline.NewMetrics(s.Registry), sanitize.NewMetrics(s.Registry)
	m.SetReadiness(s.Ready) // dpsurv_ready is what /readyz answers
	if err := s.initMetricsAtStart(cfg, m, sm); err != nil {
		return err
	}
	s.metrics.Store(m)
	s.records.Store(sm)
	chain, err := sanitizers.New(cfg.SanitizerConfig(s.Key), s.Mem)
	if err != nil {
		return err
	}
	s.chain = chain
	defer chain.Release()
	for _, g := range chain.Guarantees() {
		if g.WorstCaseLoss != nil {
			sm.Privacy.WithLabelValues(g.Field, g.Kind).Set(*g.WorstCaseLoss)
		}
		if g.Warning != "" {
			s.Log.Warn("privacy guarantee weaker than nominal", zap.String("field", g.Field), zap.String("warning", g.Warning))
		}
	}
	for _, w := range cfg.Kafka.Warnings() {
		s.Log.Warn("insecure kafka configuration", zap.String("warning", w))
	}
	validator, err := schemas.NewValidator(cfg.Spec(), s.Mem)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	validator.SetMaxDeadRows(cmp.Or(cfg.Input.MaxDeadLetterRows, sanitize.DefaultMaxDeadRows))
	validator.SetMaxDecodeBytes(cmp.Or(cfg.Input.MaxDecodedBytes, DefaultMaxDecodedBytes))
	maxMsg := cfg.maxMessageBytes()

	if cfg.HTTP.Listen != "" {
		h, err := StartHealthServer(cfg.HTTP.Listen, s.Registry, s.Ready)
		if err != nil {
			return err
		}
		s.health.Store(h)
		defer h.Close()
		s.Log.Info("health and metrics endpoints up", zap.String("addr", h.Addr()))
	}

	// Connect (and authenticate) before consuming; stay alive, not ready,
	// while the broker refuses us.
	if !s.retryUntil(ctx, "kafka connection failed; not ready, retrying", func() error {
		return kafkaconn.CheckConnection(ctx, cfg.Kafka)
	}) {
		return nil
	}
	topics := map[string]int{cfg.Output.DeadLetterTopic: 1}
	outTopics := []string{cfg.Output.DeadLetterTopic}
	if cfg.Output.SanitizedTopic != "" {
		topics[cfg.Output.SanitizedTopic] = max(cfg.Input.Partitions, 1)
		outTopics = append(outTopics, cfg.Output.SanitizedTopic)
	}
	if cfg.Input.Partitions > 0 {
		topics[cfg.Input.Topic] = cfg.Input.Partitions
	}
	if err := ensureTopics(ctx, s.Log, cfg.Kafka, topics, s.retryBackoff(time.Second)); err != nil {
		return fmt.Errorf("ensure topics: %w", err)
	} else if ctx.Err() != nil {
		return nil
	}

	// Learn the output topics' max.message.bytes: a lower limit than
	// output.max_message_bytes (less the record-batch overhead) wins.
	if lim, err := kafkaconn.TopicMaxMessageBytes(ctx, cfg.Kafka, outTopics...); err != nil {
		s.Log.Warn("topic max.message.bytes unknown; using output.max_message_bytes", zap.Error(err), zap.Int("max_message_bytes", maxMsg))
	} else {
		for topic, l := range lim {
			if l-topicBatchOverhead < maxMsg {
				maxMsg = max(l-topicBatchOverhead, 1024)
				s.Log.Info("output messages bounded by the topic's max.message.bytes", zap.String("topic", topic),
					zap.Int("max_message_bytes", l), zap.Int("bound", maxMsg))
			}
		}
	}
	tr := s.transport()
	var out message.Sink = discardSink{}
	if cfg.Output.SanitizedTopic != "" {
		out, err = tr.Sink(ctx, RoleSanitized, maxMsg)
	} else {
		s.Log.Info("no output.sanitized_topic: central releases only, the sanitized rows are not published")
	}
	if err != nil {
		return fmt.Errorf("output.sanitized_topic: %w", err)
	}
	defer out.Close()
	dead, err := tr.Sink(ctx, RoleDeadLetter, maxMsg)
	if err != nil {
		return fmt.Errorf("output.dead_letter_topic: %w", err)
	}
	defer dead.Close()
	source, err := tr.Source(ctx, RoleInput)
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	defer source.Close()
	registerSkipped(s.Registry, source)

	aggRun := s.aggregatorLoop(cfg, validator)

	proc := s.Processor
	if proc == nil {
		proc = &sanitize.Processor{NoTraceContext: cfg.Output.TraceContext != nil && !*cfg.Output.TraceContext,
			Validator: validator, Chain: chain, Format: cfg.Input.Format, Mem: s.Mem, Metrics: sm, Log: s.Log,
			MaxMessageBytes: maxMsg}
	}
	// Lag and stalls from the group's committed offsets against the end
	// offsets of every partition (the reader's own lag only covers the
	// partitions it was assigned).
	// A stalled partition assigned to this replica restarts the reader
	// (leave and rejoin the group).
	stream := &pipeline.Stream{Source: source, Processor: proc, Metrics: m, Log: s.Log,
		Routes:   map[string]message.Sink{sanitize.RouteOutput: out, sanitize.RouteDeadLetter: dead},
		Failures: sanitize.DeadLetters{MaxMessageBytes: maxMsg}, OnAck: sm.Acked}
	lm := newLagMonitor(cfg, m, s.Log)
	if s.StallClock != nil {
		lm.now = s.StallClock.Now
	}
	lm.reader, lm.healthy = readerOf(source), stream.Ready
	s.lag.Store(lm)
	lctx, lcancel := context.WithCancel(ctx)
	lagDone := make(chan struct{})
	go func() { defer close(lagDone); lm.run(lctx) }()
	defer func() { lcancel(); <-lagDone }()
	s.stream.Store(stream)
	s.Log.Info("stream starting",
		zap.String("input", cfg.Input.Topic), zap.String("sanitized", cfg.Output.SanitizedTopic),
		zap.String("dead_letter", cfg.Output.DeadLetterTopic), zap.String("group", cfg.Input.GroupID))
	if aggRun != nil {
		err = runBoth(ctx, stream.Run, aggRun)
	} else {
		err = stream.Run(ctx)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		s.Log.Error("stream stopped", zap.Error(err))
		return err
	}
	s.Log.Info("stream stopped cleanly")
	return nil
}

// discardSink is the sanitized output of a service without
// output.sanitized_topic (central releases only): it acknowledges and
// publishes nothing.
type discardSink struct{}

func (discardSink) Connect(context.Context) error                  { return nil }
func (discardSink) Write(context.Context, []message.Message) error { return nil }
func (discardSink) Close() error                                   { return nil }

// retryBackoff is a start-up retry's backoff: from RetryBackoff (def when
// unset), doubling up to 30 s.
func (s *Service) retryBackoff(def time.Duration) *retry.Backoff {
	if s.RetryBackoff > 0 {
		def = s.RetryBackoff
	}
	return retry.New(def, 30*time.Second)
}

// retryUntil calls op until it succeeds, logging each failure as msg and
// waiting with the retry backoff (from 500 ms) between calls; it reports
// false when ctx ends first.
func (s *Service) retryUntil(ctx context.Context, msg string, op func() error) bool {
	bo := s.retryBackoff(500 * time.Millisecond)
	for {
		err := op()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		s.Log.Error(msg, zap.Error(err), zap.Duration("backoff", bo.Current()))
		if !bo.Wait(ctx) {
			return false
		}
	}
}
