package pipeline

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the runtime's Prometheus metrics (messages, batches, sinks,
// acknowledgements, lag, readiness), registered on an injected registry.
// What a processor counts of the records is its own (the sanitizing
// processor's: package processors/sanitize). Labels never carry record
// values.
type Metrics struct {
	MessagesIn    prometheus.Counter
	ConsumerLag   prometheus.Gauge
	BatchLatency  prometheus.Histogram
	SinkErrors    *prometheus.CounterVec // by route
	CommitErrors  prometheus.Counter
	ReadErrors    prometheus.Counter
	Ready         prometheus.Gauge
	ProcessErrors prometheus.Counter
	// StalledPartitions counts input partitions with lag whose committed
	// offset has not moved for input.stall_timeout.
	StalledPartitions prometheus.Gauge
	// ReaderRestarts counts input reader restarts (leave and rejoin the
	// group) after a stall of a partition assigned to this replica.
	ReaderRestarts prometheus.Counter
}

// NewMetrics creates and registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		MessagesIn: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_messages_in_total", Help: "Input messages consumed."}),
		ProcessErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_process_errors_total",
			Help: "Messages a processing stage failed on (dead-lettered as unprocessable)."}),
		ConsumerLag: deprecatedAlias{
			Gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dpsurv_consumer_lag_messages",
				Help: "Input messages (Kafka offsets) not yet committed by the consumer group: end offsets minus committed offsets over every input partition, assigned or not."}),
			old: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dpsurv_consumer_lag",
				Help: "Deprecated (removed in 0.2.0): use dpsurv_consumer_lag_messages, the same value."}),
		},
		StalledPartitions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dpsurv_stalled_partitions",
			Help: "Input partitions with lag whose committed offset has not moved for input.stall_timeout (the service is then not ready)."}),
		ReaderRestarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_reader_restarts_total",
			Help: "Input reader restarts (leave and rejoin the consumer group) after a partition assigned to this replica, or to no member, stalled for input.stall_timeout."}),
		BatchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dpsurv_batch_latency_seconds",
			Help: "Time from reading a batch to committing it.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		SinkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpsurv_sink_errors_total",
			Help: "Failed sink writes (retried), by sink."}, []string{"sink"}),
		CommitErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_commit_errors_total",
			Help: "Failed offset commits (retried; a later commit covers them)."}),
		ReadErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_read_errors_total",
			Help: "Failed source reads (retried with backoff while not ready)."}),
		Ready: &readyGauge{Gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dpsurv_ready",
			Help: "1 when the service is ready: exactly what /readyz answers (200: 1, 503: 0)."})},
	}
	if reg != nil {
		reg.MustRegister(m.MessagesIn, m.ConsumerLag, m.ConsumerLag.(deprecatedAlias).old,
			m.BatchLatency, m.SinkErrors, m.CommitErrors, m.ReadErrors, m.Ready,
			m.ProcessErrors, m.StalledPartitions, m.ReaderRestarts)
	}
	return m
}

// readyGauge is dpsurv_ready. The stream sets it; once SetReadiness wires
// the service's readiness, a scrape reports that instead, so that the
// metric always equals what /readyz answers (stalled partitions, the
// aggregators and the stream's own state included).
type readyGauge struct {
	prometheus.Gauge
	fn atomic.Pointer[func() bool]
}

func (g *readyGauge) Collect(ch chan<- prometheus.Metric) {
	ch <- g
}

// Write reports the wired readiness, else the value the stream set.
func (g *readyGauge) Write(out *dto.Metric) error {
	f := g.fn.Load()
	if f == nil {
		return g.Gauge.Write(out)
	}
	v := 0.0
	if (*f)() {
		v = 1
	}
	out.Gauge = &dto.Gauge{Value: &v}
	return nil
}

// SetReadiness makes dpsurv_ready report ready() (the function /readyz
// answers with) at every scrape.
func (m *Metrics) SetReadiness(ready func() bool) {
	if g, ok := m.Ready.(*readyGauge); ok {
		g.fn.Store(&ready)
	}
}

// deprecatedAlias is a gauge that also sets a second gauge under a former
// name, kept for one release so that dashboards and alerts can move over.
type deprecatedAlias struct {
	prometheus.Gauge
	old prometheus.Gauge
}

func (g deprecatedAlias) Set(v float64) { g.Gauge.Set(v); g.old.Set(v) }
func (g deprecatedAlias) Inc()          { g.Gauge.Inc(); g.old.Inc() }
func (g deprecatedAlias) Dec()          { g.Gauge.Dec(); g.old.Dec() }
func (g deprecatedAlias) Add(v float64) { g.Gauge.Add(v); g.old.Add(v) }
func (g deprecatedAlias) Sub(v float64) { g.Gauge.Sub(v); g.old.Sub(v) }
func (g deprecatedAlias) SetToCurrentTime() {
	g.Gauge.SetToCurrentTime()
	g.old.SetToCurrentTime()
}
