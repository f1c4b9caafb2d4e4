package cli

import (
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest"
)

// TestMain lets three parallel tests run at once rather than GOMAXPROCS
// (2 on the CI machine): TestDemoRunsEndToEnd spends most of its seconds
// waiting on its embedded broker, its consumer groups and a window to
// close, and meanwhile two CPU-bound tests keep both cores busy. After the
// tests, no goroutine of kafka-go, kfake or dpsurv may be left running
// (brokertest.RunWithLeakCheck): the demo and `dpsurv run` close all they
// open.
func TestMain(m *testing.M) { brokertest.Main(m, 3) }
