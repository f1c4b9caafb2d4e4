package broker_test

import (
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest"
)

func TestMain(m *testing.M) { brokertest.Main(m, 0) }
