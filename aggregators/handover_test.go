package aggregators_test

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A window charged but not published when its holder stops (a fit-topic
// write cut short, Drain unable to finish) is published by the next
// holder on its first Tick, whatever the clock: from the final
// checkpoint's unpublished list, or — when that checkpoint was not saved —
// from the earlier one that holds the window as closing (a ledger replay:
// no noise drawn, nothing charged again).
func TestNextHolderPublishesChargedWindowAtOnce(t *testing.T) {
	for _, finalCheckpoint := range []bool{true, false} {
		name := "final checkpoint saved"
		if !finalCheckpoint {
			name = "final checkpoint lost"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig(t, at(5), map[string]float64{"stream": 100}, kmConfig("km", time.Minute, 1))
			r.observe(0, rowsOf("w0", 30))
			r.fits.Fail = errors.New("broker gone")
			r.clock.Set(at(65))
			r.tick() // checkpoint (window closing), release (charged), publish fails
			if r.led.Spent("stream") != 1 || len(r.fits.Messages()) != 0 {
				t.Fatalf("spent %v, %d messages: want the window charged, unpublished", r.led.Spent("stream"), len(r.fits.Messages()))
			}
			// Drain retries the failed write until its context ends: here
			// at its second failed write (the tick failed the first: one retry).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			r.fits.OnFail = func(failed int) {
				if failed >= 3 {
					cancel()
				}
			}
			if err := r.eng.Drain(ctx); err == nil {
				t.Fatal("Drain reported success with the fit topic down")
			}
			cancel()
			r.fits.OnFail = nil
			if finalCheckpoint {
				if err := r.eng.Checkpoint(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			r.fits.Fail = nil
			r.start(2)
			r.tick() // the clock has not moved: no window closes
			if n := len(r.fits.Messages()); n != len(cohorts) {
				t.Fatalf("%d messages after the next holder's first tick, want %d", n, len(cohorts))
			}
			if r.noise.n.Load() != 0 || r.led.Spent("stream") != 1 {
				t.Errorf("the next holder drew %d values and spent %v, want a replay (0 draws, spent 1)", r.noise.n.Load(), r.led.Spent("stream"))
			}
			if p := r.eng.Pending(); p != 0 {
				t.Errorf("%d windows pending, want 0", p)
			}
		})
	}
}
