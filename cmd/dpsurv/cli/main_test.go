package cli

import (
	"os"
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest"
)

// TestMain lets three parallel tests run at once rather than GOMAXPROCS
// (2 on the CI machine): TestDemoRunsEndToEnd spends most of its seconds
// waiting on its embedded broker, its consumer groups and a window to
// close, and meanwhile two CPU-bound tests keep both cores busy.
func TestMain(m *testing.M) {
	brokertest.WaitBoundParallel(3)
	os.Exit(m.Run())
}
