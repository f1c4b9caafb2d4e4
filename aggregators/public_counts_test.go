package aggregators_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
)

// With ledger.allow_public_counts (CountsPublicElsewhere) an add/remove-one
// release lists the exact record count as public and says presence is not
// protected (review finding 2); without it, it does neither.
func TestCountsPublicElsewhereStatedInRelease(t *testing.T) {
	checkPublicElsewhere(t, aggregators.PublicCountElsewhere, "presence is NOT protected",
		func(c *aggregators.Config, on bool) { c.CountsPublicElsewhere = on })
}

// Issue 22 finding 2: a service that publishes a sanitized topic from the
// same input makes presence and the window's count public through it, so
// every release (km, weibull) of such a service lists them as public and
// says presence is not protected; a central-only service (no sanitized
// topic) does neither.
func TestSanitizedTopicPresenceStatedInRelease(t *testing.T) {
	checkPublicElsewhere(t, aggregators.PublicViaSanitized, "presence and the record count are NOT protected",
		func(c *aggregators.Config, on bool) { c.PresencePublicViaSanitized = on })
}

// checkPublicElsewhere releases one window of a km and a weibull aggregate,
// both marked by mark or neither, and checks that every release lists public
// and states statement in its relation exactly when marked.
func checkPublicElsewhere(t *testing.T, public, statement string, mark func(c *aggregators.Config, on bool)) {
	t.Helper()
	for _, marked := range []bool{false, true} {
		km := kmConfig("km", time.Minute, 1)
		wb := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: 1,
			Cohorts: cohorts, TimeMax: 9, TimeUnit: "days"}
		mark(&km, marked)
		mark(&wb, marked)
		r := newRig(t, at(1), map[string]float64{"stream": 100}, km, wb)
		r.observe(0, rowsOf("p", 40))
		r.clock.Set(at(61))
		r.tick()
		got := r.fits.fits(t)
		for _, k := range []string{key("km", 0, "A"), key("wb", 0, "A")} {
			m, ok := got[k]
			if !ok {
				t.Fatalf("no release %s: %v", k, keys(got))
			}
			listed := slices.Contains(m.Public, public)
			stated := strings.Contains(m.Neighbouring, statement)
			if listed != marked || stated != marked {
				t.Errorf("%s marked %v: public lists %q %v, relation states it %v (%q)", k, marked, public, listed, stated, m.Neighbouring)
			}
		}
	}
}
