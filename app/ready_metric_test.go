package app_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/message"
)

// dpsurv_ready is what /readyz answers. Issue 21: with partitions stalled
// /readyz answered 503 while dpsurv_ready stayed 1 (it followed the
// stream alone). Here partition 1 never commits (the reader restart does
// not heal it): the service is not ready, and the metric says so.
func TestReadyMetricEqualsReadyzWhenStalled(t *testing.T) {
	t.Parallel()
	f := reliabFixture(t, "readymetric", 90*time.Second, func(cfg *app.Config) {
		cfg.Input.Partitions = 2
		cfg.Input.MaxBatch = 1
		cfg.Input.StallTimeout = time.Second // the smallest valid
		cfg.HTTP.Listen = "127.0.0.1:0"
	})
	cfg := f.Config
	produceKeyed(f, "r", 20)
	var wrapped atomic.Pointer[stallPartition]
	clk := apptest.NewClock(time.Now())
	svc := runQuiet(f, func(svc *app.Service) {
		svc.Registry = prometheus.NewRegistry()
		svc.StallClock = clk
		svc.Transport = apptest.Kafka(cfg, func(role app.Role, s message.Source) message.Source {
			if role != app.RoleInput {
				return s
			}
			st := &stallPartition{Source: s, partition: 1, released: func() bool { return false }}
			wrapped.Store(st)
			return st
		}, nil)
	})
	reg := svc.Registry
	stallNow(svc, clk, cfg.Input.StallTimeout)
	svc.WaitFor(40*time.Second, "a stalled partition", func() bool {
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
