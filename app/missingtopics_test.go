package app_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/message"
)

// A broker that will not create the output topics (as one without the
// CreateTopics API, librdkafka's mock cluster): the service neither exits
// nor goes ready; it logs which topics it needs and retries; once they
// can be made it sanitizes. On main it exited at once ("ensure topics").
func TestServiceWaitsForTopicsTheBrokerWillNotCreate(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, txnConfig(nil), apptest.Topics(map[string]int{"in": 1}))
	var refuse atomic.Bool
	refuse.Store(true)
	var refused atomic.Int64
	f.Cluster.Kfake().ControlKey(int16(kmsg.CreateTopics), func(kmsg.Request) (kmsg.Response, error, bool) {
		if !refuse.Load() {
			return nil, nil, false // the broker handles it
		}
		f.Cluster.Kfake().KeepControl()
		refused.Add(1)
		return nil, errors.New("no CreateTopics API"), true
	})
	p := makeTxnPayloads(t, f.Config, f.Mem)
	// 100 ms between the first retries (1 s in production); they double.
	svc := f.Run(func(s *app.Service) { s.RetryBackoff = 100 * time.Millisecond })
	defer svc.StopOK()

	svc.WaitFor(20*time.Second, "CreateTopics refused twice (the service retries)", func() bool { return refused.Load() >= 2 })
	svc.Waiting("its output topics are missing")
	if l := f.Logs.String(); !strings.Contains(l, `"create_topics":["dlq","out"]`) {
		t.Errorf("the log does not name the missing topics dlq and out:\n%s", l)
	}

	// The topics can be made now: it proceeds and sanitizes.
	refuse.Store(false)
	f.Produce("in", []message.Message{{Value: p.plain}})
	svc.WaitFor(40*time.Second, "5 records out once the topics exist", func() bool { return svc.Metric("dpsurv_records_out_total", nil) == 5 })
	svc.WaitFor(10*time.Second, "ready once the topics exist and the stream flows", svc.Ready)
}
