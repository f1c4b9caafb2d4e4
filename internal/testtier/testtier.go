// Package testtier marks the tests of the full tier: multi-process fault,
// broker-restart, replica, soak and other slow tests. `go test -short ./...`
// (the inner loop) skips them, saying so; `make test` (what CI runs) runs
// everything.
package testtier

import "testing"

// Full skips t under -short with a message that names the tier, so a skip
// is never silent.
func Full(t testing.TB, kind string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: full tier only (run without -short, as make test does)", kind)
	}
}

// Long reports whether the long versions of the statistical studies run:
// in the full tier, and not under the race detector, which slows pure
// number crunching tenfold without finding anything in it. `make test`
// runs them in its own step without -race (make stats); under -race and
// -short they run at their short size.
func Long() bool { return !testing.Short() && !Race }

// Heavy skips t unless Long, saying where it runs.
func Heavy(t testing.TB, kind string) {
	t.Helper()
	if !Long() {
		t.Skipf("%s: long statistical study, run without -race and -short (make stats, part of make test)", kind)
	}
}
