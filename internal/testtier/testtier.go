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
