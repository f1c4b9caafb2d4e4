package app

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/schemas"
)

// The series below exist from the start of the process, at zero, so that
// dashboards and alerts see them before the first event: a counter that
// appears at 1 is invisible to increase() and rate(), so the first dead
// letter or the first withheld window would not fire an alert.

// initStreamSeries creates the dead-letter series of every reason code.
func initStreamSeries(m *sanitize.Metrics) {
	for _, r := range schemas.Reasons {
		m.DeadLettered.WithLabelValues(r)
	}
}

// withheldReasons are the values of the reason label of
// dpsurv_releases_withheld_total.
var withheldReasons = []string{aggregators.ReasonBudgetExceeded, aggregators.ReasonHorizonReached, aggregators.ReasonError, aggregators.ReasonPendingLimit, aggregators.ReasonMaxPatients}

// initAggregatorSeries creates the release counters of every configured
// aggregate (and every withholding reason) and registers
// dpsurv_privacy_budget_limit: the configured total epsilon of each
// budgeted scope. The limit is public configuration; with the ledger's
// dpsurv_privacy_budget_spent it gives the fraction of a scope used. Every
// replica exports it, the lease holder or not.
func initAggregatorSeries(reg prometheus.Registerer, m *aggregators.Metrics, cfg Config) *prometheus.GaugeVec {
	for _, a := range cfg.Aggregators {
		m.Releases.WithLabelValues(a.Name)
		m.Replayed.WithLabelValues(a.Name)
		m.Published.WithLabelValues(a.Name)
		m.PendingWindows.WithLabelValues(a.Name)
		for _, r := range withheldReasons {
			m.Withheld.WithLabelValues(a.Name, r)
		}
	}
	limit := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpsurv_privacy_budget_limit",
		Help: "Configured total epsilon of each budgeted scope of the privacy ledger (ledger.budget)."}, []string{"scope"})
	scopes := make([]string, 0, len(cfg.Ledger.Budget))
	for s := range cfg.Ledger.Budget {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	for _, s := range scopes {
		limit.WithLabelValues(s).Set(cfg.Ledger.Budget[s])
	}
	reg.MustRegister(limit)
	return limit
}
