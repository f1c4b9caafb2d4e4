package app

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

// initMetricsAtStart creates every series the service documents, at zero,
// before the health server starts and before any Kafka connection: a
// replica that never connects, never holds the aggregator lease or never
// sees a clamped value still exports them, so that rate() and increase()
// see the first event and an alert on a missing series is not needed
// (TestEveryDocumentedMetricExportedAtStart).
func (s *Service) initMetricsAtStart(cfg Config, m *pipeline.Metrics, records *sanitize.Metrics) error {
	initStreamSeries(records)
	records.Clamped.WithLabelValues("time")
	for _, sink := range []string{sanitize.RouteOutput, sanitize.RouteDeadLetter} {
		m.SinkErrors.WithLabelValues(sink)
	}
	s.reload.mu.Lock()
	c := cfg
	s.reload.running = &c
	s.reload.budget = map[string]float64{}
	for k, v := range cfg.Ledger.Budget {
		s.reload.budget[k] = v
	}
	s.reload.mu.Unlock()
	if len(cfg.Aggregators) == 0 {
		return nil
	}
	if err := ledger.RegisterMetrics(s.Registry, cfg.Ledger.Budget); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	s.aggregatorMetrics(cfg)
	return nil
}

// aggregatorMetrics registers the aggregators' metrics once (a new lease
// reuses them) with every series of every configured aggregate at zero.
func (s *Service) aggregatorMetrics(cfg Config) *aggregators.Metrics {
	s.reload.mu.Lock()
	defer s.reload.mu.Unlock()
	if s.reload.agg != nil {
		return s.reload.agg
	}
	m := aggregators.NewMetrics(s.Registry)
	s.reload.limit = initAggregatorSeries(s.Registry, m, cfg)
	for _, a := range cfg.Aggregators {
		for _, c := range []*prometheus.CounterVec{m.Records, m.Versions, m.Late, m.Clamped, m.CensoredAtHorizon, m.HorizonsRestarted} {
			c.WithLabelValues(a.Name)
		}
		m.OpenWindows.WithLabelValues(a.Name)
		m.PendingWindows.WithLabelValues(a.Name)
		m.FitSeconds.WithLabelValues(a.Name)
		m.ReleaseDelay.WithLabelValues(a.Name)
		reasons := []string{aggregators.SkipNoObservedAt, aggregators.SkipFutureObservedAt, aggregators.SkipMaxPatients}
		if a.Window.Cumulative {
			reasons = append(reasons, aggregators.SkipCumulativeSeen)
		}
		if a.Kind == "discrete" {
			reasons = append(reasons, aggregators.SkipWindowCap, aggregators.SkipInvalidCovariate)
		}
		for _, r := range reasons {
			m.Skipped.WithLabelValues(a.Name, r)
		}
		m.Withheld.WithLabelValues(a.Name, aggregators.ReasonCumulativeForeign)
	}
	s.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dpsurv_aggregator_leader",
		Help: "1 while this process holds the aggregator lease and runs the aggregators."}, func() float64 {
		if s.leader.Load() {
			return 1
		}
		return 0
	}))
	s.reload.agg = m
	return m
}
