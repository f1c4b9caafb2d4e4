package aggregators_test

import (
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/ledger"
)

// A cumulative horizon is charged once per horizon whatever happens to the
// state (issue 22, finding 1): when the checkpoint is lost with the ledger
// intact, or the aggregate is removed from the configuration for one
// checkpoint and put back under its name, a new tree starts; it must count
// a new horizon charged anew (within budget), never publish a second
// horizon about the same patients under the first horizon's one charge.
func TestCumulativeHorizonLostStateChargedAnew(t *testing.T) {
	lostCheckpoint := func(r *rig) {
		r.state = &ledger.MemoryState{}
		r.start(2)
	}
	removedAndReadded := func(r *rig) {
		all := r.aggs
		r.aggs = []aggregators.Config{kmConfig("other", time.Minute, 0.1)}
		r.start(2)
		r.clock.Set(at(60*3 + 30))
		r.tick()
		if err := r.eng.Checkpoint(t.Context()); err != nil {
			t.Fatal(err)
		}
		r.aggs = all
		r.start(3)
	}
	for _, c := range []struct {
		name   string
		budget float64
		lose   func(*rig)
	}{
		{"checkpoint lost, budget for one horizon", 1, lostCheckpoint},
		{"checkpoint lost, budget for two horizons", 2, lostCheckpoint},
		{"removed and re-added, budget for one horizon", 1, removedAndReadded},
		{"removed and re-added, budget for two horizons", 2.5, removedAndReadded},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := kmConfig("cum", time.Minute, 1)
			cfg.Window.Cumulative, cfg.Window.Horizon = true, 3
			r := newRig(t, at(1), map[string]float64{"stream": c.budget}, cfg)
			feed := func(from, to int) {
				for w := from; w < to; w++ {
					r.clock.Set(at(60*w + 1))
					r.observe(int64(w), rowsOf("p", 12)) // the same patients in every window
					r.tick()
				}
				r.clock.Set(at(60*to + 1))
				r.tick()
				r.tick()
			}
			feed(0, 3)
			c.lose(r)
			feed(4, 7)

			got := r.fits.fits(t)
			var first, second []aggregators.FitMessage
			for w := 0; w < 7; w++ {
				f, ok := got[key("cum", 60*w, "A")]
				if !ok {
					continue
				}
				if w < 3 {
					first = append(first, f)
				} else {
					second = append(second, f)
				}
			}
			if len(first) != 3 {
				t.Fatalf("first horizon: %d releases, want 3", len(first))
			}
			spent := r.led.Spent(ledger.ScopeStream)
			if c.budget < 2 {
				if len(second) != 0 {
					t.Fatalf("a second horizon was published under the first one's charge: %d more releases (release_index %d...), spent %v of %v",
						len(second), second[0].ReleaseIndex, spent, c.budget)
				}
				if spent != 1 {
					t.Fatalf("spent %v, want 1", spent)
				}
				if v := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "cum", "reason": aggregators.ReasonBudgetExceeded}); v < 1 {
					t.Fatalf("the new horizon's windows were not withheld for the budget (withheld %v)", v)
				}
			} else {
				if len(second) != 3 {
					t.Fatalf("second horizon: %d releases, want 3", len(second))
				}
				for i, f := range second {
					if f.HorizonEpoch != 2 || f.ReleaseIndex != i+1 {
						t.Fatalf("second horizon release %d: horizon_epoch %d, release_index %d; want 2, %d", i, f.HorizonEpoch, f.ReleaseIndex, i+1)
					}
				}
				if spent != 2 {
					t.Fatalf("two horizons spent %v, want 2 (each charged once)", spent)
				}
			}
			for _, f := range first {
				if f.HorizonEpoch != 1 {
					t.Fatalf("first horizon release: horizon_epoch %d, want 1", f.HorizonEpoch)
				}
			}
			if v := metric(t, r.reg, "dpsurv_aggregator_horizons_restarted_total", map[string]string{"aggregate": "cum"}); v != 1 {
				t.Fatalf("horizons restarted %v, want 1", v)
			}
		})
	}
}

// A restart that restores the checkpoint keeps the horizon and its one
// charge: no second charge, release_index continues.
func TestCumulativeHorizonRestoredKeepsItsCharge(t *testing.T) {
	cfg := kmConfig("cum", time.Minute, 1)
	cfg.Window.Cumulative, cfg.Window.Horizon = true, 4
	r := newRig(t, at(1), map[string]float64{"stream": 1}, cfg)
	for w := 0; w < 4; w++ {
		r.clock.Set(at(60*w + 1))
		r.observe(int64(w), rowsOf("w"+string(rune('a'+w)), 10))
		r.tick()
		if w == 1 {
			r.start(7)
		}
	}
	r.clock.Set(at(60*4 + 1))
	r.tick()
	r.tick()
	got := r.fits.fits(t)
	for w := 0; w < 4; w++ {
		f, ok := got[key("cum", 60*w, "A")]
		if !ok {
			t.Fatalf("window %d not released: %v", w, keys(got))
		}
		if f.ReleaseIndex != w+1 || f.HorizonEpoch != 1 {
			t.Fatalf("window %d: release_index %d, horizon_epoch %d", w, f.ReleaseIndex, f.HorizonEpoch)
		}
	}
	if spent := r.led.Spent(ledger.ScopeStream); spent != 1 {
		t.Fatalf("spent %v, want 1", spent)
	}
}
