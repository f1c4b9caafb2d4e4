package aggregators_test

import (
	"slices"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
)

// A Tick that outlasts whole processing-time windows (its ledger and topic
// I/O on a loaded machine) must not make them vanish: the windows the
// clock passed while the engine ran are released, empty. Windows a
// restarted engine was down for are not. (On the old main the windows
// spanned by a stall were never registered, so never released: the ops
// fault tests saw them missing at load 20.)
func TestWindowsSpannedByAStallAreReleased(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	r := newRig(t, t0.Add(500*time.Millisecond), map[string]float64{"stream": 100}, kmConfig("km", time.Second, 1))
	r.tick()
	r.clock.Set(t0.Add(3500 * time.Millisecond)) // the Tick stalled 3 s
	r.tick()
	keys := func() []string {
		var ks []string
		for _, e := range r.backend.Entries() {
			ks = append(ks, e.Key)
		}
		return ks
	}
	key := func(s int) string { return aggregators.WindowKey("km", t0.Unix()+int64(s)) }
	if got, want := keys(), []string{key(0), key(1), key(2)}; !slices.Equal(got, want) {
		t.Fatalf("released %v after the stall, want %v", got, want)
	}
	// A restart 3 s later: the windows it was down for stay unreleased.
	r.start(2)
	r.clock.Set(t0.Add(7500 * time.Millisecond))
	r.tick()
	r.clock.Set(t0.Add(8500 * time.Millisecond))
	r.tick()
	if got, want := keys(), []string{key(0), key(1), key(2), key(3), key(7)}; !slices.Equal(got, want) {
		t.Fatalf("released %v after the restart, want %v", got, want)
	}
}
