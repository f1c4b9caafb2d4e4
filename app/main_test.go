package app_test

import (
	"os"
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest"
)

// The end-to-end tests mostly wait (broker round trips, stall and session
// timeouts, retries with backoff); each runs its own cluster and calls
// t.Parallel, and more of them run at once than there are cores.
func TestMain(m *testing.M) {
	brokertest.WaitBoundParallel(8)
	os.Exit(m.Run())
}
