package app

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/schemas"
)

const aggYAML = validYAML + `  fit_topic: ehr.tte.fits
aggregators:
  - name: km-weekly
    kind: km
    epsilon: 0.5
    window: {size: 168h, lateness: 24h, time: event}
    params: {bin_width: 7, conf: 0.9}
  - name: km-cumulative
    kind: km
    epsilon: 1
    window: {size: 24h, cumulative: true, horizon: 365}
  - name: weibull-daily
    kind: weibull
    epsilon: 1
    window: {size: 24h}
    params: {method: lsp, rungs: 200}
ledger:
  topic: dpsurv.ledger
  checkpoint_interval: 10s
  drain_timeout: 40s
  budget: {stream: 20, "cohort:1": 10}
`

func TestParseAggregatorConfig(t *testing.T) {
	t.Parallel()
	cfg, acs := aggregatorConfigs(t, aggYAML)
	checks := []struct {
		name      string
		got, want any
	}{
		{"count", len(acs), 3},
		{"bin width", acs[0].Params.(aggregators.KMParams).BinWidth, 7.0},
		{"lateness", acs[0].Window.Lateness, 24 * time.Hour},
		{"event time", acs[0].Window.Time, "event"},
		{"horizon", acs[1].Window.Horizon, 365},
		{"rungs", acs[2].Params.(aggregators.WeibullParams).Rungs, 200},
		{"cohorts from schema", len(acs[2].Cohorts), 2},
		{"time max from schema", acs[2].TimeMax, 5000.0},
		{"checkpoint interval", cfg.CheckpointInterval(), 10 * time.Second},
		{"drain timeout", cfg.AggregatorDrainTimeout(), 40 * time.Second},
		{"group", cfg.AggregatorGroupID(), "dpsurv-agg"},
		{"curve topic", cfg.FitCurveTopic(), "ehr.tte.fits.arrow"},
		{"state topic", cfg.LedgerStateTopic(), "dpsurv.ledger.state"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// ledger.drain_timeout reaches the aggregators' runner, which bounds
// their stop with it; unset, the runner gets the 10 s default.
func TestAggregatorDrainTimeoutReachesTheRunner(t *testing.T) {
	t.Parallel()
	_, conn := brokertest.Start(t, broker.Options{Partitions: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ set, want time.Duration }{{0, DefaultAggregatorDrainTimeout}, {40 * time.Second, 40 * time.Second}} {
		cfg := parseKMConfig(t, "{dead_letter_topic: dlq, fit_topic: fits}", "{stream: 1}")
		cfg.Kafka = conn
		cfg.Ledger.File = filepath.Join(t.TempDir(), "ledger.jsonl")
		cfg.Ledger.DrainTimeout = tc.set
		reg := prometheus.NewRegistry()
		s := &Service{Config: cfg, Log: zap.NewNop(), Registry: reg}
		v, err := schemas.NewValidator(cfg.Spec(), memory.NewGoAllocator())
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.startAggregation(ctx, cfg, v, aggregators.NewMetrics(reg))
		if err != nil {
			t.Fatal(err)
		}
		if got := a.runner.DrainTimeout; got != tc.want {
			t.Errorf("ledger.drain_timeout %v: the runner's drain timeout is %v, want %v", tc.set, got, tc.want)
		}
		a.close(s.Log)
	}
}

func TestAggregatorConfigErrorsNameFieldPath(t *testing.T) {
	t.Parallel()
	wantEditsRefused(t, aggYAML, []configEdit{
		{"no ledger", "  topic: dpsurv.ledger\n", "", "ledger: set ledger.topic"},
		{"both ledgers", "  topic: dpsurv.ledger\n", "  topic: dpsurv.ledger\n  file: /tmp/l\n", "not both"},
		{"no stream budget", "stream: 20, ", "", "ledger.budget.stream: required"},
		{"no fit topic", "  fit_topic: ehr.tte.fits\n", "", "output.fit_topic: required"},
		{"fit topic is input", "fit_topic: ehr.tte.fits", "fit_topic: ehr.tte", "output.fit_topic"},
		{"unknown param", "bin_width: 7, conf", "bin_wdth: 7, conf", "aggregators[0].params.bin_wdth: unknown"},
		{"weibull param on km", "bin_width: 7, conf", "bin_width: 7, gamma: 3, conf", "aggregators[0].params.gamma: unknown for kind km"},
		{"horizon", "cumulative: true, horizon: 365", "cumulative: true", "aggregators[1].window.horizon"},
		{"cumulative weibull", "size: 24h}\n    params: {method", "size: 24h, cumulative: true, horizon: 4}\n    params: {method", "aggregators[2].window.cumulative"},
		{"discrete params", "kind: weibull", "kind: discrete", "aggregators[2].params.rungs: unknown for kind discrete"},
		{"discrete covariates", "kind: weibull\n    epsilon: 1\n    window: {size: 24h}\n    params: {method: lsp, rungs: 200}", "kind: discrete\n    epsilon: 1\n    window: {size: 24h}", "aggregators[2].params.covariates: required"},
		{"duplicate name", "name: weibull-daily", "name: km-weekly", "aggregators[2].name: duplicate"},
		{"sub-second window", "size: 24h}\n    params: {method", "size: 1500ms}\n    params: {method", "aggregators[2].window.size"},
		{"lateness", "lateness: 24h", "lateness: 24000h", "aggregators[0].window.lateness"},
		{"epsilon", "epsilon: 0.5\n    window", "epsilon: 0\n    window", "aggregators[0].epsilon"},
		{"unknown window key", "time: event}", "time: event, slide: 1h}", "aggregators[0].window.slide: unknown field"},
		{"checkpoint", "checkpoint_interval: 10s", "checkpoint_interval: -1s", "ledger.checkpoint_interval"},
		{"drain timeout", "drain_timeout: 40s", "drain_timeout: -1s", "ledger.drain_timeout: must be >= 0"},
		// the kinds' own typed params, each decoded and checked by its kind
		{"weibull sims type", "method: lsp, rungs: 200", "method: lsp, interval_sims: many", "aggregators[2].params.interval_sims: want an integer, got many"},
		{"weibull sims range", "method: lsp, rungs: 200", "method: lsp, interval_sims: 20", "aggregators[2].params.interval_sims: want 0 (default)"},
		{"km conf range", "bin_width: 7, conf: 0.9", "bin_width: 7, conf: 1.5", "aggregators[0].params.conf: must be in (0, 1)"},
		{"window size type", "size: 24h}\n    params: {method", "size: [1]}\n    params: {method", "aggregators[2].window.size"},
	})
}
