package app_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/internal/harness"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
)

// dpsurv_ready is what /readyz answers. Issue 21: with partitions stalled
// /readyz answered 503 while dpsurv_ready stayed 1 (it followed the
// stream alone). Here partition 1 never commits (the reader restart does
// not heal it): the service is not ready, and the metric says so.
func TestReadyMetricEqualsReadyzWhenStalled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, _ := brokertest.Start(t, broker.Options{Partitions: 2})
	cfg := reliabConfig(t, cl, "readymetric")
	cfg.Input.Partitions = 2
	cfg.Input.MaxBatch = 1
	cfg.Input.StallTimeout = 2 * time.Second
	cfg.HTTP.Listen = "127.0.0.1:0"
	if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{cfg.Input.Topic: 2, cfg.Output.SanitizedTopic: 2, cfg.Output.DeadLetterTopic: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var msgs []message.Message
	for i := range 20 {
		msgs = append(msgs, message.Message{Key: []byte(fmt.Sprintf("key-%d", i)), Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs(fmt.Sprintf("r%d-", i), 5), false)})
	}
	if err := harness.Produce(ctx, cfg.Kafka, cfg.Input.Topic, msgs, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	svc := &app.Service{Config: cfg, Key: reliabKey, Log: zap.NewNop(), Mem: memory.NewGoAllocator(), Registry: reg}
	var wrapped atomic.Pointer[stallPartition]
	svc.Transport = apptest.Kafka(cfg, func(role app.Role, s message.Source) message.Source {
		if role != app.RoleInput {
			return s
		}
		st := &stallPartition{Source: s, partition: 1, released: func() bool { return false }}
		wrapped.Store(st)
		return st
	}, nil)
	done, _ := startService(t, ctx, svc)
	waitUntil(t, done, 40*time.Second, "a stalled partition", func() bool {
		m := svc.Metrics()
		return m != nil && apptest.Metric(reg, "dpsurv_stalled_partitions", nil) > 0
	})
	for range 10 {
		rz, m := readyzAndMetric(t, svc.HealthAddr(), reg)
		if stalled := apptest.Metric(reg, "dpsurv_stalled_partitions", nil); stalled > 0 && (rz || m != 0) {
			t.Fatalf("%v stalled partitions: /readyz ready=%v, dpsurv_ready=%v; want not ready and 0", stalled, rz, m)
		}
		if rz != (m == 1) {
			t.Fatalf("/readyz ready=%v but dpsurv_ready=%v", rz, m)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
