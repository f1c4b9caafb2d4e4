package cli

import "testing"

// TestDemoProgressEndsWhenBudgetSpent: the demo stops waiting for an
// aggregate's final window once a release states less budget left than
// that aggregate charges (a starved demo spread its records over more
// windows and spent the stream budget: its later windows are withheld,
// and it waited out its 2-minute cap and failed, 2026-11-26).
func TestDemoProgressEndsWhenBudgetSpent(t *testing.T) {
	rel := func(agg string, end, charged, left float64) map[string]any {
		return map[string]any{"aggregate": agg, "window_end_unix": end, "epsilon_charged": charged,
			"budget_remaining": map[string]any{"stream": left}}
	}
	aggs := []string{"km", "weibull"}
	tests := []struct {
		name     string
		releases []map[string]any
		want     bool
	}{
		{"nothing read", nil, false},
		{"both final windows full", []map[string]any{rel("km", 100, 2, 18), rel("km", 100, 2, 18), rel("weibull", 100, 2, 16), rel("weibull", 100, 2, 16)}, true},
		{"a final window not full", []map[string]any{rel("km", 100, 2, 18), rel("km", 100, 2, 18), rel("weibull", 100, 2, 16)}, false},
		{"earlier windows only, budget left", []map[string]any{rel("km", 96, 2, 4), rel("weibull", 96, 2, 2)}, false},
		{"earlier windows only, budget spent", []map[string]any{rel("km", 96, 2, 2), rel("weibull", 96, 2, 0)}, true},
		{"budget left equals the charge", []map[string]any{rel("km", 96, 2, 2), rel("weibull", 96, 2, 2)}, false},
		{"one spent, the other never seen", []map[string]any{rel("km", 96, 2, 0)}, false},
		{"km's final window full, weibull spent", []map[string]any{rel("km", 100, 2, 4), rel("km", 100, 2, 2), rel("weibull", 96, 2, 1)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newDemoProgress(100)
			for _, r := range tc.releases {
				p.observe(r)
			}
			if got := p.done(aggs, 2); got != tc.want {
				t.Errorf("done = %v, want %v (remaining %v, charges %v, final windows %v)", got, tc.want, p.remaining, p.charge, p.lastWindow)
			}
		})
	}
}
