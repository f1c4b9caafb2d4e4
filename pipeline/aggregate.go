package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ledger/kafkaledger"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// DefaultAggregatorTick is how often the aggregators look at the clock to
// close windows and retry pending releases.
const DefaultAggregatorTick = 250 * time.Millisecond

// AggregatorRunner feeds an aggregators.Engine from the input topic in its
// own consumer group. Offsets are committed only after a checkpoint that
// covers them; messages the restored checkpoint already counted are
// skipped, so a lost commit never double-counts.
type AggregatorRunner struct {
	Source    Source
	Validator *schemas.Validator
	Format    string // arrow | json
	Engine    *aggregators.Engine
	Log       *zap.Logger
	// Tick is how often windows are checked (default DefaultAggregatorTick);
	// CheckpointInterval how often a checkpoint is saved and offsets
	// committed when no window closes (default DefaultCheckpointInterval).
	Tick               time.Duration
	CheckpointInterval time.Duration
	// DrainTimeout bounds the final checkpoint and commit (default 10 s).
	DrainTimeout time.Duration

	ready atomic.Bool
}

// Ready reports whether the runner is consuming.
func (r *AggregatorRunner) Ready() bool { return r.ready.Load() }

// Run consumes until ctx ends (then it saves a last checkpoint and commits,
// and returns nil) or the source fails (then it returns at once, without a
// checkpoint: like a crash, the restart resumes from the last one).
func (r *AggregatorRunner) Run(ctx context.Context) error {
	tick := orDuration(r.Tick, DefaultAggregatorTick)
	every := orDuration(r.CheckpointInterval, DefaultCheckpointInterval)
	drain := orDuration(r.DrainTimeout, 10*time.Second)
	log := r.Log
	if log == nil {
		log = zap.NewNop()
	}

	rctx, rcancel := context.WithCancel(ctx)
	batches := make(chan sources.Batch)
	readErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := readLoop(rctx, r.Source, readHooks{
			failed: func(err error, wait time.Duration) {
				// Transient (a broker outage): the checkpoint covers what
				// was counted; read again after a pause.
				log.Warn("aggregator read failed; retrying", zap.Error(err), zap.Duration("backoff", wait))
			},
			send: func(b sources.Batch) bool {
				select {
				case batches <- b:
					return true
				case <-rctx.Done():
					return false
				}
			},
		})
		if err != nil {
			readErr <- err
		}
	}()
	defer func() { rcancel(); wg.Wait() }()

	var acks []func(context.Context) error
	commit := func(ctx context.Context) {
		// The latest batch's commit implies the earlier ones per
		// partition; committing in reverse makes the rest no-ops.
		for _, ack := range slices.Backward(acks) {
			if err := ack(ctx); err != nil {
				log.Warn("aggregator offset commit failed (the checkpoint still covers them)", zap.Error(err))
				break
			}
		}
		acks = acks[:0]
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	last := time.Now()
	r.ready.Store(true)
	defer r.ready.Store(false)
	// An immediate first tick registers the current windows and releases
	// what the restored checkpoint left pending.
	if _, err := r.Engine.Tick(ctx); err != nil {
		log.Warn("aggregator checkpoint failed; retrying", zap.Error(err))
	}
	for {
		select {
		case <-ctx.Done():
			rcancel()
			wg.Wait()
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
			defer cancel()
			if err := r.Engine.Checkpoint(dctx); err != nil {
				log.Error("final aggregator checkpoint failed", zap.Error(err))
				return nil
			}
			commit(dctx)
			log.Info("aggregators stopped after a final checkpoint")
			return nil
		case err := <-readErr:
			return fmt.Errorf("aggregators: read input: %w", err)
		case b := <-batches:
			if err := r.observe(b); err != nil {
				return err
			}
			acks = append(acks, b.Ack)
		case <-ticker.C:
			saved, err := r.Engine.Tick(ctx)
			if err != nil {
				log.Warn("aggregator checkpoint failed; retrying", zap.Error(err))
				continue
			}
			if !saved && len(acks) > 0 && time.Since(last) >= every {
				if err := r.Engine.Checkpoint(ctx); err != nil {
					log.Warn("aggregator checkpoint failed; retrying", zap.Error(err))
					continue
				}
				saved = true
			}
			if saved {
				last = time.Now()
				commit(ctx)
			}
		}
	}
}

func (r *AggregatorRunner) observe(b sources.Batch) error {
	for _, m := range b.Messages {
		if r.Engine.Skip(m.Partition, m.Offset) {
			_ = r.Engine.Observe(m.Partition, m.Offset, nil) // counts the redelivery
			continue
		}
		var good arrow.Record
		if r.Format == "json" {
			good, _ = r.Validator.DecodeJSON(m.Value)
		} else {
			good, _ = r.Validator.DecodeIPC(m.Value)
		}
		// Bad rows are the sanitizing stream's to dead-letter.
		err := r.Engine.Observe(m.Partition, m.Offset, good)
		good.Release()
		if err != nil {
			return fmt.Errorf("aggregators: %w", err)
		}
	}
	return nil
}

func orDuration(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

// aggregation is the aggregators' part of a running Service.
type aggregation struct {
	runner  *AggregatorRunner
	closers []func() error
}

func (a *aggregation) close(log *zap.Logger) {
	for _, c := range slices.Backward(a.closers) {
		if err := c(); err != nil {
			log.Warn("closing aggregator resources", zap.Error(err))
		}
	}
}

// startAggregation opens the ledger, the checkpoint store, the fit sinks,
// the engine (restoring the checkpoint) and the input source of the
// aggregators. On error everything opened is closed.
func (s *Service) startAggregation(ctx context.Context, cfg Config, validator *schemas.Validator, metrics *aggregators.Metrics) (_ *aggregation, err error) {
	a := &aggregation{}
	defer func() {
		if err != nil {
			a.close(s.Log)
		}
	}()
	aggCfgs, err := cfg.AggregatorConfigs()
	if err != nil {
		return nil, err
	}
	var (
		backend ledger.Backend
		state   ledger.StateStore
	)
	if cfg.Ledger.File != "" {
		f, err := ledger.OpenFile(cfg.Ledger.File, s.Log)
		if err != nil {
			return nil, fmt.Errorf("ledger.file: %w", err)
		}
		a.closers = append(a.closers, f.Close)
		st, err := ledger.OpenFileState(cfg.LedgerStateFile())
		if err != nil {
			return nil, fmt.Errorf("ledger.file: %w", err)
		}
		a.closers = append(a.closers, st.Close)
		backend, state = f, st
	} else {
		k, err := kafkaledger.Open(ctx, cfg.Kafka, cfg.Ledger.Topic, s.Log)
		if err != nil {
			return nil, fmt.Errorf("ledger.topic: %w", err)
		}
		a.closers = append(a.closers, k.Close)
		st, err := kafkaledger.OpenState(ctx, cfg.Kafka, cfg.LedgerStateTopic(), s.Log)
		if err != nil {
			return nil, fmt.Errorf("ledger.topic: %w", err)
		}
		a.closers = append(a.closers, st.Close)
		backend, state = k, st
	}
	led, err := ledger.Open(ctx, backend, ledger.Options{Budget: cfg.Ledger.Budget, Registerer: s.Registry, Log: s.Log})
	if err != nil {
		return nil, err
	}
	if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{cfg.Output.FitTopic: 1, cfg.FitCurveTopic(): 1}, nil); err != nil {
		return nil, fmt.Errorf("ensure fit topics: %w", err)
	}
	fitK, err := sinks.NewKafka(sinks.KafkaConfig{Conn: cfg.Kafka, Topic: cfg.Output.FitTopic}, s.Log)
	if err != nil {
		return nil, fmt.Errorf("output.fit_topic: %w", err)
	}
	a.closers = append(a.closers, fitK.Close)
	curveK, err := sinks.NewKafka(sinks.KafkaConfig{Conn: cfg.Kafka, Topic: cfg.FitCurveTopic()}, s.Log)
	if err != nil {
		return nil, fmt.Errorf("output.fit_arrow_topic: %w", err)
	}
	a.closers = append(a.closers, curveK.Close)
	var fits, curves sinks.Sink = fitK, curveK
	if s.WrapFitSink != nil {
		fits = s.WrapFitSink(fits)
	}
	clock := s.Clock
	if clock == nil {
		clock = aggregators.SystemClock{}
	}
	eng, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{
		Aggregates: aggCfgs, Topic: cfg.Input.Topic, Ledger: led, State: state,
		Fits: fits, CurveFits: curves, Clock: clock, Noise: dp.NewSecureSource(),
		Metrics: metrics, Log: s.Log.Named("aggregators"), Mem: memoryOr(s.Mem),
		AsyncFits: true, // no discrete fit (a pSGLD window can take a minute) holds up the intake
	})
	if err != nil {
		return nil, err
	}
	// The same session as the sanitizing stream's group: after a holder's
	// kill -9 the new holder gets the input partitions when the dead
	// member's session expires (without it, kafka-go's 30 s default).
	src, err := sources.NewKafka(sources.KafkaConfig{Conn: cfg.Kafka, Topic: cfg.Input.Topic,
		GroupID: cfg.AggregatorGroupID(), MaxBatch: cfg.Input.MaxBatch,
		SessionTimeout: cfg.Input.SessionTimeout, HeartbeatInterval: cfg.Input.SessionTimeout / 3, RebalanceTimeout: cfg.Input.RebalanceTimeout}, s.Log)
	if err != nil {
		return nil, fmt.Errorf("aggregators input: %w", err)
	}
	a.closers = append(a.closers, src.Close)
	var source Source = src
	if s.WrapAggregatorSource != nil {
		source = s.WrapAggregatorSource(src)
	}
	a.runner = &AggregatorRunner{Source: source, Validator: validator, Format: cfg.Input.Format, Engine: eng,
		Log: s.Log.Named("aggregators"), Tick: s.AggregatorTick, CheckpointInterval: cfg.CheckpointInterval()}
	s.Log.Info("aggregators starting", zap.Int("aggregates", len(aggCfgs)), zap.String("group", cfg.AggregatorGroupID()),
		zap.String("fit_topic", cfg.Output.FitTopic), zap.Bool("file_ledger", cfg.Ledger.File != ""))
	return a, nil
}

func memoryOr(m memory.Allocator) memory.Allocator {
	if m == nil {
		return memory.DefaultAllocator
	}
	return m
}

// runBoth runs the stream and the aggregators; the first to fail stops the
// other (which then drains), and its error is returned.
func runBoth(ctx context.Context, stream func(context.Context) error, agg func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- agg(ctx) }()
	go func() { errs <- stream(ctx) }()
	first := <-errs
	cancel()
	second := <-errs
	if first != nil && !errors.Is(first, context.Canceled) {
		return first
	}
	if second != nil && !errors.Is(second, context.Canceled) {
		return second
	}
	return nil
}

// aggregatorLoop returns the aggregators' part of Service.Run (nil without
// aggregators). In Kafka-ledger mode it runs only while this process holds
// the lease; in file mode the ledger file's lock admits one process.
func (s *Service) aggregatorLoop(cfg Config, validator *schemas.Validator) func(context.Context) error {
	if len(cfg.Aggregators) == 0 {
		return nil
	}
	metrics := aggregators.NewMetrics(s.Registry) // once: a new lease reuses them
	initAggregatorSeries(s.Registry, metrics, cfg)
	s.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dpsurv_aggregator_leader",
		Help: "1 while this process holds the aggregator lease and runs the aggregators."}, func() float64 {
		if s.leader.Load() {
			return 1
		}
		return 0
	}))
	run := func(ctx context.Context) error {
		agg, err := s.startAggregation(ctx, cfg, validator, metrics)
		if err != nil {
			return fmt.Errorf("aggregators: %w", err)
		}
		defer agg.close(s.Log)
		s.agg.Store(agg.runner)
		defer s.agg.Store(nil)
		return agg.runner.Run(ctx)
	}
	if cfg.Ledger.File != "" {
		return func(ctx context.Context) error {
			s.leader.Store(true)
			defer s.leader.Store(false)
			return run(ctx)
		}
	}
	return func(ctx context.Context) error {
		return runWithLease(ctx, cfg, s.Log.Named("aggregators"), &s.leader, leaseTimingsFor(cfg), run)
	}
}
