package ledger

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// collectors are the ledger's Prometheus metrics.
type collectors struct {
	remainingGauge *prometheus.GaugeVec
	spentGauge     *prometheus.GaugeVec
	charges        prometheus.Counter
	replays        prometheus.Counter
	refusals       *prometheus.CounterVec
	superseded     prometheus.Counter
}

func newCollectors() collectors {
	return collectors{
		remainingGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpsurv_privacy_budget_remaining",
			Help: "Epsilon left in each budgeted scope of the privacy ledger."}, []string{"scope"}),
		spentGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpsurv_privacy_budget_spent",
			Help: "Epsilon charged so far to each scope of the privacy ledger (restored from the ledger on start)."}, []string{"scope"}),
		charges: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_ledger_charges_total",
			Help: "Releases charged and persisted by this process."}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_ledger_replays_total",
			Help: "Releases requested again and answered from the ledger (no new noise, no new charge)."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpsurv_ledger_refusals_total",
			Help: "Charges refused because a scope's budget would be exceeded, by scope."}, []string{"scope"}),
		superseded: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_ledger_superseded_total",
			Help: "Ledger records holding a second, different value of a key already counted (a write that landed late or came from a former lease holder): never published, charged all the same."}),
	}
}

// RegisterMetrics registers the ledger's metrics on reg before any ledger
// is open (a replica that does not hold the aggregator lease has none), so
// that every documented series exists from the start of the process:
// dpsurv_ledger_refusals_total at 0 for each budgeted scope, the counters
// at 0. The budget gauges get no value until a ledger is read (a value
// before would be a guess). Open reuses the collectors registered here.
func RegisterMetrics(reg prometheus.Registerer, budget map[string]float64) error {
	c := newCollectors()
	var err error
	if c.remainingGauge, err = register(reg, c.remainingGauge); err == nil {
		if c.spentGauge, err = register(reg, c.spentGauge); err == nil {
			if c.charges, err = register(reg, c.charges); err == nil {
				if c.replays, err = register(reg, c.replays); err == nil {
					if c.refusals, err = register(reg, c.refusals); err == nil {
						c.superseded, err = register(reg, c.superseded)
					}
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("register ledger metrics: %w", err)
	}
	for s := range budget {
		c.refusals.WithLabelValues(s)
	}
	return nil
}
