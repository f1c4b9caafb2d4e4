package sinks_test

import (
	"os"
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest"
)

func TestMain(m *testing.M) { os.Exit(brokertest.RunWithLeakCheck(m)) }
