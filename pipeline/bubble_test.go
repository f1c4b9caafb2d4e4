package pipeline_test

import (
	"testing"
	"testing/synctest"
)

// bubble runs a test in a synctest bubble. The stream's timers — the
// retry backoff of a failed connect, read or write, the drain timeout —
// then run on the bubble's fake clock, which moves only when every
// goroutine of the test is blocked: a test waits for no real time, and no
// scheduling of a loaded machine can change what it sees. Only tests on
// in-memory sources and sinks run in a bubble (a real socket is not
// allowed in one).
func bubble(f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}
