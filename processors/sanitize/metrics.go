package sanitize

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/pipeline"
)

// Metrics are the sanitizing processor's accounting of records,
// registered on an injected registry. The records are counted once their
// batch is acknowledged (Metrics.Acked is the stream's OnAck), so that
// records_in = records_out + dead_letter_rows over acknowledged messages.
// Labels never carry record values.
type Metrics struct {
	RecordsIn    prometheus.Counter
	RecordsOut   prometheus.Counter
	DeadLettered *prometheus.CounterVec // by reason
	// DeadLetterRows counts decoded rows dead-lettered (acknowledged):
	// records_in = records_out + dead_letter_rows.
	DeadLetterRows prometheus.Counter
	Clamped        *prometheus.CounterVec // by field
	Privacy        *prometheus.GaugeVec   // configured per-record loss by field and kind
	RecordUpdates  prometheus.Counter
}

// NewMetrics creates and registers the metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RecordsIn: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_records_in_total",
			Help: "Input records decoded (good and bad) in acknowledged messages."}),
		RecordsOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_records_out_total", Help: "Sanitized records written and acknowledged."}),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpsurv_records_dead_lettered_total",
			Help: "Records (or whole undecoded messages) acknowledged by the dead-letter topic, by reason."}, []string{"reason"}),
		DeadLetterRows: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_dead_letter_rows_total",
			Help: "Decoded input records acknowledged by the dead-letter topic (records_in = records_out + this)."}),
		Clamped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpsurv_values_clamped_total",
			Help: "Values moved into their public bounds before a mechanism, by field."}, []string{"field"}),
		Privacy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpsurv_record_privacy_loss",
			Help: "Configured worst-case loss per record and field (epsilon for local-dp, L for time-indistinguishability)."}, []string{"field", "kind"}),
		RecordUpdates: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_record_versions_total",
			Help: "Records whose id was seen before with a different value in this process (each is a further release about that patient)."}),
	}
	if reg != nil {
		reg.MustRegister(m.RecordsIn, m.RecordsOut, m.DeadLettered, m.DeadLetterRows, m.Clamped, m.Privacy, m.RecordUpdates)
	}
	return m
}

// Acked counts the messages written for an acknowledged batch (the
// stream's OnAck): every routed message stands for its Rows input
// records, sanitized (RouteOutput) or dead-lettered (RouteDeadLetter).
func (m *Metrics) Acked(written []pipeline.Routed) {
	in, out, dead := 0, 0, 0
	by := map[string]int{}
	for _, r := range written {
		in += r.Rows
		switch r.Route {
		case RouteOutput:
			out += r.Rows
		case RouteDeadLetter:
			dead += r.Rows
			if r.Reason != "" {
				by[r.Reason] += max(r.Rows, 1)
			}
		}
	}
	m.RecordsIn.Add(float64(in))
	m.RecordsOut.Add(float64(out))
	m.DeadLetterRows.Add(float64(dead))
	for r, n := range by {
		m.DeadLettered.WithLabelValues(r).Add(float64(n))
	}
}
