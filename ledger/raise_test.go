package ledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dpsurv/dpsurv/ledger"
)

// A reload raises a scope's budget in the open ledger: a release refused
// at the old budget is accepted after it; lowering, an unknown scope and a
// non-finite value are refused and change nothing.
func TestRaiseBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := ledger.RegisterMetrics(reg, map[string]float64{"stream": 1}); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(testCtx(t), &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 1}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Release(testCtx(t), "w/1", []string{"stream"}, 0.8, constant(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Release(testCtx(t), "w/2", []string{"stream"}, 0.8, constant(`{"b":1}`)); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("second release at budget 1: %v", err)
	}
	for _, tc := range []struct {
		scope string
		v     float64
		want  string
	}{
		{"stream", 0.5, "lowering needs a restart"},
		{"cohort:a", 5, "new scope needs a restart"},
		{"stream", 0, "must be positive"},
	} {
		if err := l.RaiseBudget(tc.scope, tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RaiseBudget(%s, %v) = %v, want %q", tc.scope, tc.v, err, tc.want)
		}
	}
	if rem, _ := l.Remaining("stream"); rem < 0.19 || rem > 0.21 {
		t.Fatalf("remaining %v after refused changes, want 0.2", rem)
	}
	if err := l.RaiseBudget("stream", 2); err != nil {
		t.Fatal(err)
	}
	if rem, _ := l.Remaining("stream"); rem < 1.19 || rem > 1.21 {
		t.Errorf("remaining %v after raising to 2, want 1.2", rem)
	}
	if _, _, err := l.Release(testCtx(t), "w/2", []string{"stream"}, 0.8, constant(`{"b":1}`)); err != nil {
		t.Errorf("release after raising: %v", err)
	}
	// The collectors registered before the ledger opened are the ledger's:
	// one refusal counted on the pre-registered series.
	if got := testutil.ToFloat64(mustCounter(t, reg, "dpsurv_ledger_refusals_total")); got != 1 {
		t.Errorf("refusals %v, want 1", got)
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "copy"})
			c.Add(mf.Metric[0].GetCounter().GetValue())
			return c
		}
	}
	t.Fatalf("%s: no single series", name)
	return nil
}
