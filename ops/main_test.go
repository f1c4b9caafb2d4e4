package ops

import (
	"os"
	"testing"

	"github.com/dpsurv/dpsurv/broker"
)

func TestMain(m *testing.M) { os.Exit(broker.RunWithLeakCheck(m)) }
