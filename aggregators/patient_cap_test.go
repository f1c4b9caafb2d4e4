package aggregators_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/schemas"
)

// Issue 22 finding 3: when a patient bound binds, one added patient can
// displace another; in a cumulative aggregate the displaced patient used to
// count in a later window and displace another there (5 leaf cells over 3
// windows for one added patient, against the stated 2). Now a window in
// which a bound binds is withheld (reason max_patients) before any charge
// or noise, and a patient excluded by the per-window bound is marked as
// seen for the horizon, so it never counts later: the windows that are
// released hold the same patients with and without the added one.
func TestPatientCapWithholdsAndNeverCascades(t *testing.T) {
	restore := aggregators.SetPatientBounds(5, 1000)
	t.Cleanup(restore)
	ids := func(names ...string) schemas.Rows {
		var r schemas.Rows
		for i, n := range names {
			r.ID = append(r.ID, n)
			r.Time = append(r.Time, float64(1+i%9))
			r.Event = append(r.Event, true)
			r.Cohort = append(r.Cohort, 0)
		}
		return r
	}
	for _, c := range []struct {
		name       string
		cumulative bool
	}{{"per-window km", false}, {"cumulative km", true}} {
		t.Run(c.name, func(t *testing.T) {
			// Each world: window 0 holds the flood (capped); the patients
			// it excluded come back in window 1, with new ones.
			run := func(extra bool) (map[string]aggregators.FitMessage, *rig) {
				cfg := kmConfig("km", time.Minute, 1)
				if c.cumulative {
					cfg.Window.Cumulative, cfg.Window.Horizon = true, 8
				}
				r := newRig(t, at(1), map[string]float64{"stream": 100}, cfg)
				w0 := []string{"a", "b", "c", "d", "e", "f", "g"} // f and g are beyond the bound 5
				if extra {
					w0 = append([]string{"p"}, w0...) // p displaces e
				}
				r.observe(0, ids(w0...))
				r.clock.Set(at(61))
				r.observe(1, ids("e", "f", "g", "h")) // the excluded patients return
				r.tick()
				r.clock.Set(at(121))
				r.observe(2, ids("i", "j"))
				r.tick()
				r.clock.Set(at(181))
				r.tick()
				r.tick()
				return r.fits.fits(t), r
			}
			got, r := run(false)
			if _, ok := got[key("km", 0, "A")]; ok {
				t.Fatal("window 0, where the patient bound bound, was released")
			}
			if v := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "km", "reason": aggregators.ReasonMaxPatients}); v != 1 {
				t.Fatalf("withheld for max_patients: %v, want 1", v)
			}
			if _, ok := got[key("km", 60, "A")]; !ok {
				t.Fatalf("window 1 (below the bound) not released: %v", keys(got))
			}
			with, _ := run(true)
			for _, w := range []int{60, 120} {
				a, b := got[key("km", w, "A")], with[key("km", w, "A")]
				ja, _ := json.Marshal(a)
				jb, _ := json.Marshal(b)
				if string(ja) != string(jb) {
					t.Fatalf("window %d: one added patient in window 0 changed a later release:\n%s\n%s", w, ja, jb)
				}
			}
			if c.cumulative {
				// e, f, g were excluded (or counted) in window 0 in both
				// worlds: their return in window 1 is not counted.
				if v := metric(t, r.reg, "dpsurv_aggregator_records_skipped_total", map[string]string{"aggregate": "km", "reason": aggregators.SkipCumulativeSeen}); v < 2 {
					t.Fatalf("the excluded patients counted again later: cumulative_seen skips %v", v)
				}
			}
		})
	}
}
