package app_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
)

// A broker that will not create the output topics (as one without the
// CreateTopics API, librdkafka's mock cluster): the service neither exits
// nor goes ready; it logs which topics it needs and retries; once they
// can be made it sanitizes. On main it exited at once ("ensure topics").
func TestServiceWaitsForTopicsTheBrokerWillNotCreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := brokertest.Start(t, broker.Options{Topics: map[string]int{"in": 1}})
	var refuse atomic.Bool
	refuse.Store(true)
	var refused atomic.Int64
	c.Kfake().ControlKey(int16(kmsg.CreateTopics), func(kmsg.Request) (kmsg.Response, error, bool) {
		if !refuse.Load() {
			return nil, nil, false // the broker handles it
		}
		c.Kfake().KeepControl()
		refused.Add(1)
		return nil, errors.New("no CreateTopics API"), true
	})
	cfg := txnConfig(c.Addrs())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	p := makeTxnPayloads(t, cfg, mem)
	logs := &apptest.Logs{}
	reg := prometheus.NewRegistry()
	svc := apptest.RunService(t, ctx, &app.Service{Config: cfg, Key: bytes.Repeat([]byte{7}, 32), Log: logs.Logger(), Mem: mem, Registry: reg})
	defer func() {
		if err := svc.Stop(); err != nil {
			t.Errorf("service: %v", err)
		}
	}()

	if !harness.WaitFor(ctx, 20*time.Second, func() bool { return refused.Load() >= 2 }) {
		t.Fatalf("CreateTopics refused %d times, want the service to retry", refused.Load())
	}
	svc.Waiting("its output topics are missing")
	if l := logs.String(); !strings.Contains(l, `"create_topics":["dlq","out"]`) {
		t.Errorf("the log does not name the missing topics dlq and out:\n%s", l)
	}

	// The topics can be made now: it proceeds and sanitizes.
	refuse.Store(false)
	if err := harness.Produce(ctx, cfg.Kafka, "in", []message.Message{{Value: p.plain}}, nil); err != nil {
		t.Fatal(err)
	}
	if !harness.WaitFor(ctx, 40*time.Second, func() bool { return apptest.Metric(reg, "dpsurv_records_out_total", nil) == 5 }) {
		t.Fatalf("records out %v, want 5 once the topics exist", apptest.Metric(reg, "dpsurv_records_out_total", nil))
	}
	if !harness.WaitFor(ctx, 10*time.Second, svc.Ready) {
		t.Error("not ready once the topics exist and the stream flows")
	}
}
