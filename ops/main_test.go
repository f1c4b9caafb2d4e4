package ops

import (
	"os"
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest"
)

// TestBinDir holds what the tests build once for all of them (the shipped
// dpsurv binary of the multi-process memory tests): the first test that
// needs it makes it, TestMain removes it.
var TestBinDir string

// The fault, replica and memory tests mostly wait (on child processes,
// session timeouts, broker round trips); those that call t.Parallel run
// four at once.
func TestMain(m *testing.M) {
	brokertest.WaitBoundParallel(4)
	code := brokertest.RunWithLeakCheck(m)
	if TestBinDir != "" {
		_ = os.RemoveAll(TestBinDir)
	}
	os.Exit(code)
}
