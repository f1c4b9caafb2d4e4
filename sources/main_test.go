package sources_test

import (
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest"
)

// Its Kafka tests mostly wait on broker round trips, each on its own
// cluster: more of them run at once than there are cores.
func TestMain(m *testing.M) { brokertest.Main(m, 8) }
