package aggregators_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
)

// A release that fails after its noise was drawn is never drawn again
// (review of issue 12): redrawing until a build succeeds would make what is
// published depend on whether the first draw failed on these data. The
// window is stored in the ledger as withheld, its epsilon charged, nothing
// is published, and neither a later tick nor a restarted engine draws it
// again.
func TestReleaseBuildFailureChargedNeverRedrawn(t *testing.T) {
	builds := 0
	t.Cleanup(aggregators.SetBuildFault(func() error {
		builds++
		return errors.New("fit diverged")
	}))
	r := newRig(t, at(5), map[string]float64{"stream": 100}, kmConfig("km", time.Minute, 1))
	r.observe(0, rowsOf("w0", 30))
	r.clock.Set(at(65))
	r.observe(1, rowsOf("w1", 5))
	for range 8 {
		r.tick()
	}
	if builds != 1 {
		t.Fatalf("the window was built %d times, want once (never redrawn)", builds)
	}
	if n := len(r.fits.Messages()); n != 0 {
		t.Fatalf("%d messages published for a failed release, want none", n)
	}
	if got := r.led.Spent("stream"); got != 1 {
		t.Fatalf("stream spent %v, want the window's epsilon 1 (charged although withheld)", got)
	}
	if got := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "km", "reason": aggregators.ReasonError}); got != 1 {
		t.Fatalf("withheld{reason=error} = %v, want 1", got)
	}
	if got := metric(t, r.reg, "dpsurv_releases_total", map[string]string{"aggregate": "km"}); got != 0 {
		t.Fatalf("releases = %v, want 0", got)
	}
	// A restarted process replays the ledger's entry: still nothing
	// published, nothing drawn, nothing charged again.
	r.start(2)
	for range 4 {
		r.tick()
	}
	if builds != 1 || len(r.fits.Messages()) != 0 || r.led.Spent("stream") != 1 {
		t.Fatalf("after a restart: %d builds, %d messages, spent %v", builds, len(r.fits.Messages()), r.led.Spent("stream"))
	}
}
