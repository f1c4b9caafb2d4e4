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
	for _, marked := range []bool{false, true} {
		km := kmConfig("km", time.Minute, 1)
		km.CountsPublicElsewhere = marked
		wb := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: 1,
			Cohorts: cohorts, TimeMax: 9, TimeUnit: "days", CountsPublicElsewhere: marked}
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
			listed := slices.Contains(m.Public, aggregators.PublicCountElsewhere)
			stated := strings.Contains(m.Neighbouring, "presence is NOT protected")
			if listed != marked || stated != marked {
				t.Errorf("%s marked %v: public lists the count %v, relation states it %v (%q)", k, marked, listed, stated, m.Neighbouring)
			}
		}
	}
}

// Issue 22 finding 2: a service that publishes a sanitized topic from the
// same input makes presence and the window's count public through it, so
// every release (km, weibull) of such a service lists them as public and
// says presence is not protected; a central-only service (no sanitized
// topic) does neither.
func TestSanitizedTopicPresenceStatedInRelease(t *testing.T) {
	for _, marked := range []bool{false, true} {
		km := kmConfig("km", time.Minute, 1)
		km.PresencePublicViaSanitized = marked
		wb := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: 1,
			Cohorts: cohorts, TimeMax: 9, TimeUnit: "days", PresencePublicViaSanitized: marked}
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
			listed := slices.Contains(m.Public, aggregators.PublicViaSanitized)
			stated := strings.Contains(m.Neighbouring, "presence and the record count are NOT protected")
			if listed != marked || stated != marked {
				t.Errorf("%s beside a sanitized topic %v: public lists presence %v, relation states it %v (%q)", k, marked, listed, stated, m.Neighbouring)
			}
		}
	}
}
