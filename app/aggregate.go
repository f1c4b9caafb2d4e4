package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ledger/kafkaledger"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/schemas"
)

// aggregation is the aggregators' part of a running Service.
type aggregation struct {
	runner  *pipeline.AggregatorRunner
	fits    message.Sink
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
	led, err := ledger.Open(ctx, backend, ledger.Options{Budget: s.budgetFor(cfg), Registerer: s.Registry, Log: s.Log})
	if err != nil {
		return nil, err
	}
	s.reload.ledger.Store(led) // a reload raises its budgets
	if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{cfg.Output.FitTopic: 1, cfg.FitCurveTopic(): 1}, nil); err != nil {
		return nil, fmt.Errorf("ensure fit topics: %w", err)
	}
	tr := s.transport()
	fits, err := tr.Sink(ctx, RoleFits, 0)
	if err != nil {
		return nil, fmt.Errorf("output.fit_topic: %w", err)
	}
	a.closers = append(a.closers, fits.Close)
	fits = &serialSink{Sink: fits} // the engine and republishStatements write to it
	a.fits = fits
	curves, err := tr.Sink(ctx, RoleCurves, 0)
	if err != nil {
		return nil, fmt.Errorf("output.fit_arrow_topic: %w", err)
	}
	a.closers = append(a.closers, curves.Close)
	for _, x := range []struct {
		what string
		sink message.Sink
	}{{"output.fit_topic", fits}, {"output.fit_arrow_topic", curves}} {
		if err := pipeline.Connect(ctx, s.Log, x.what, x.sink); err != nil {
			return nil, err
		}
	}
	s.publishStatementAtStart(ctx, cfg, fits) // statement_publish.go
	clock := s.Clock
	if clock == nil {
		clock = aggregators.SystemClock{}
	}
	eng, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{
		Aggregates: aggCfgs, Topic: cfg.Input.Topic, Ledger: led, State: state,
		Fits: fits, CurveFits: curves, Clock: clock, Noise: dp.NewSecureSource(),
		Metrics: metrics, Log: s.Log.Named("aggregators"), Mem: memoryOr(s.Mem),
		AsyncFits:         true, // no window fit (km, weibull, discrete: up to minutes) holds up the intake
		MaxPendingWindows: cfg.Ledger.MaxPendingWindows,
	})
	if err != nil {
		return nil, err
	}
	source, err := tr.Source(ctx, RoleAggregatorInput)
	if err != nil {
		return nil, fmt.Errorf("aggregators input: %w", err)
	}
	a.closers = append(a.closers, source.Close)
	a.runner = &pipeline.AggregatorRunner{Source: source, Engine: aggregators.Feed{Engine: eng, Decode: goodRows(validator, cfg.Input.Format)},
		Log: s.Log.Named("aggregators"), Tick: s.AggregatorTick, CheckpointInterval: cfg.CheckpointInterval(),
		DrainTimeout: cfg.AggregatorDrainTimeout()}
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
	metrics := s.aggregatorMetrics(cfg) // registered at start (metrics_start.go); a new lease reuses them
	run := func(ctx context.Context) error {
		// Every start-up dependency (ledger, checkpoint, topics, sinks,
		// source) is retried with backoff while the service stays alive,
		// sanitizing, and not ready (no aggregator runner yet).
		var agg *aggregation
		if !s.retryUntil(ctx, "aggregators could not start; not ready, retrying", func() (err error) {
			agg, err = s.startAggregation(ctx, cfg, validator, metrics)
			return err
		}) {
			return nil
		}
		defer agg.close(s.Log)
		s.agg.Store(agg.runner)
		defer s.agg.Store(nil)
		sctx, scancel := context.WithCancel(ctx)
		republished := make(chan struct{})
		go func() { defer close(republished); s.republishStatements(sctx, cfg, agg.fits) }()
		defer func() { scancel(); <-republished }()
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
