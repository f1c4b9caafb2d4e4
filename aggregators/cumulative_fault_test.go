package aggregators_test

import (
	"context"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/ledger"
)

// Review finding 3: when a cumulative window's ledger key already holds a
// value drawn by another holder's tree state (a stale lease holder), this
// aggregate's later releases would put its own node noise for the same
// nodes beside the other's. The foreign value stays the release of its
// window; every later window of the horizon is withheld (reason
// cumulative_foreign), also after a restart; a value of this aggregate that
// ends up superseded is charged the horizon's epsilon
// (ledger TestSupersededCumulativeValueChargedAtHorizonEpsilon).
func TestCumulativeForeignValueWithholdsTheHorizon(t *testing.T) {
	cfg := kmConfig("cum", time.Minute, 2)
	cfg.Window.Cumulative, cfg.Window.Horizon = true, 8
	r := newRig(t, at(1), map[string]float64{"stream": 100}, cfg)
	scopes := []string{ledger.ScopeStream, ledger.ScopeAggregate("cum")}
	for _, c := range cohorts {
		scopes = append(scopes, ledger.ScopeCohort(c))
	}
	// Window 1's key was written by another holder (draw "other").
	if _, _, err := r.led.Charge(context.Background(), ledger.Entry{Key: aggregators.WindowKey("cum", at(60).Unix()), Scopes: scopes,
		SupersededEpsilon: 2, Release: []byte(`{"aggregate":"cum","window_start_unix":60,"messages":[],"draw":"other"}`)}); err != nil {
		t.Fatal(err)
	}
	for w := range 6 {
		r.clock.Set(at(60*w + 1))
		r.observe(int64(w), rowsOf("w"+string(rune('a'+w)), 10))
		r.tick()
		if w == 3 {
			r.start(99) // the withholding survives a restart
		}
	}
	r.clock.Set(at(60*6 + 1))
	r.tick()
	got := r.fits.fits(t)
	if _, ok := got[key("cum", 0, "A")]; !ok {
		t.Fatalf("window 0 (before the foreign value) not released: %v", keys(got))
	}
	for w := 1; w < 6; w++ {
		if _, ok := got[key("cum", 60*w, "A")]; ok {
			t.Fatalf("window %d released after a foreign cumulative value", w)
		}
	}
	// window 2 is withheld before the restart, 3, 4 and 5 after it
	if v := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "cum", "reason": aggregators.ReasonCumulativeForeign}); v != 3 {
		t.Fatalf("withheld after the restart: %v, want 3 (windows 3, 4 and 5)", v)
	}
}
