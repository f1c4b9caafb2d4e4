package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ops"
)

// A discrete window's release is one message pooling every cohort (cohort
// aggregators.DiscreteCohort): CheckReleases accepts it for an aggregate
// listed in Pooled, and reports it as a missing cohort message otherwise.
func TestCheckReleasesPooled(t *testing.T) {
	const budget = 10.0
	key := aggregators.MessageKey("dt", 60, aggregators.DiscreteCohort)
	v := fmt.Sprintf(`{"key":%q,"aggregate":"dt","window_start_unix":60,"cohort":%q,"epsilon":1,"epsilon_charged":1,"budget_remaining":{"stream":9},"n":300}`,
		key, aggregators.DiscreteCohort)
	e := ledger.Entry{Key: aggregators.WindowKey("dt", 60), Epsilon: 1,
		Release: []byte(fmt.Sprintf(`{"aggregate":"dt","window_start_unix":60,"messages":[{"key":%q,"value":%s}]}`, key, v)),
		Scopes:  []string{"aggregate:dt", "cohort:A", "cohort:B", "stream"}}
	fits := []ops.KeyValue{{Key: []byte(key), Value: []byte(v)}}
	opts := ops.ReleaseOptions{Epsilon: map[string]float64{"dt": 1}, Cohorts: []string{"A", "B"}, StreamBudget: budget}

	_, err := ops.CheckReleases(fits, []ledger.Entry{e}, opts)
	if !errors.Is(err, ops.ErrReleases) || !strings.Contains(err.Error(), "want one per cohort") {
		t.Fatalf("without Pooled: error %v, want one message per cohort reported", err)
	}
	opts.Pooled = map[string]bool{"dt": true}
	rep, err := ops.CheckReleases(fits, []ledger.Entry{e}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Released() != 1 || rep.N["dt"] != 300 {
		t.Fatalf("report %+v: want 1 window, n 300", rep)
	}
}
