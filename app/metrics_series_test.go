package app

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/schemas"
)

// TestInitialSeries: the dead-letter counter has a zero series per reason
// code, every configured aggregate has zero release and withheld series,
// and dpsurv_privacy_budget_limit carries the configured budget of each
// scope, before any event.
func TestInitialSeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := sanitize.NewMetrics(reg)
	initStreamSeries(m)
	am := aggregators.NewMetrics(reg)
	cfg := Config{
		Aggregators: []AggregatorConfig{{Name: "km"}, {Name: "weibull"}},
		Ledger:      LedgerConfig{Budget: map[string]float64{"stream": 10, "aggregate:km": 4}},
	}
	initAggregatorSeries(reg, am, cfg)

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	for _, tc := range []struct {
		metric string
		want   int
	}{
		{"dpsurv_records_dead_lettered_total", len(schemas.Reasons)},
		{"dpsurv_releases_total", 2},
		{"dpsurv_releases_replayed_total", 2},
		{"dpsurv_fit_messages_total", 2},
		{"dpsurv_releases_withheld_total", 2 * 5},
		{"dpsurv_aggregator_pending_windows", 2},
		{"dpsurv_privacy_budget_limit", 2},
	} {
		if n := len(byName[tc.metric].GetMetric()); n != tc.want {
			t.Errorf("%s: %d series, want %d", tc.metric, n, tc.want)
		}
		for _, m := range byName[tc.metric].GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if tc.metric != "dpsurv_privacy_budget_limit" && v != 0 {
				t.Errorf("%s%v = %v, want 0", tc.metric, m.GetLabel(), v)
			}
		}
	}
	limits := map[string]float64{}
	for _, m := range byName["dpsurv_privacy_budget_limit"].GetMetric() {
		limits[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	if limits["stream"] != 10 || limits["aggregate:km"] != 4 {
		t.Errorf("dpsurv_privacy_budget_limit = %v, want stream 10, aggregate:km 4", limits)
	}
}
