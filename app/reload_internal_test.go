package app

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

// Reload raises the budget of the ledger the lease holder has open (and of
// every ledger opened later), updates dpsurv_privacy_budget_limit, sets the
// log level, and names what needs a restart by its config path.
func TestReloadRaisesTheOpenLedger(t *testing.T) {
	t.Parallel()
	cfg := parseKMConfig(t, "{sanitized_topic: out, dead_letter_topic: dlq, fit_topic: fits}", `{stream: 1, "cohort:a": 3}`)
	lvl := zap.NewAtomicLevelAt(zap.InfoLevel)
	s := &Service{Config: cfg, Key: []byte("k"), Log: zap.NewNop(), LogLevel: &lvl, Registry: prometheus.NewRegistry()}
	if err := s.initMetricsAtStart(cfg, pipeline.NewMetrics(s.Registry), sanitize.NewMetrics(s.Registry)); err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(context.Background(), &ledger.Memory{}, ledger.Options{Budget: s.budgetFor(cfg), Registerer: s.Registry})
	if err != nil {
		t.Fatal(err)
	}
	s.reload.ledger.Store(led)

	next := cfg
	next.Log.Level = "warn"
	next.Ledger.Budget = map[string]float64{"stream": 4, "cohort:a": 2, "cohort:b": 1}
	next.Input.Topic = "in2"
	next.Kafka.Brokers = []string{"127.0.0.1:2"}
	rep := s.Reload(next, []byte("other key"))

	if got := strings.Join(rep.Applied, "; "); got != "log.level: info -> warn; ledger.budget.stream: 1 -> 4" {
		t.Errorf("applied %q", got)
	}
	if got := strings.Join(rep.Refused, "; "); !strings.Contains(got, "ledger.budget.cohort:a: 2 is below the running 3") {
		t.Errorf("refused %q", got)
	}
	if got := strings.Join(rep.NeedRestart, "; "); got != "ledger.budget.cohort:b; kafka.brokers; input.topic; sanitizers.key_file (contents)" {
		t.Errorf("need_restart %q", got)
	}
	if lvl.Level() != zap.WarnLevel {
		t.Errorf("log level %v", lvl.Level())
	}
	if rem, _ := led.Remaining("stream"); rem != 4 {
		t.Errorf("open ledger's stream remaining %v, want 4", rem)
	}
	if b := s.budgetFor(cfg); b["stream"] != 4 || b["cohort:a"] != 3 {
		t.Errorf("budget for the next ledger %v", b)
	}
	if v := testutil.ToFloat64(s.reload.limit.WithLabelValues("stream")); v != 4 {
		t.Errorf("dpsurv_privacy_budget_limit{stream} %v", v)
	}
	// The same config again changes nothing.
	if rep := s.Reload(next, []byte("other key")); len(rep.Applied) != 0 || len(rep.Refused) != 1 {
		t.Errorf("second reload %+v", rep)
	}
}
