package app_test

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
)

// readyzAndMetric returns what /readyz answers (true: 200) and the
// dpsurv_ready gauge, read one after the other.
func readyzAndMetric(t *testing.T, addr string, reg *prometheus.Registry) (readyz bool, metric float64) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, apptest.Metric(reg, "dpsurv_ready", nil)
}

// A broker fault while the aggregators start (here every read of the
// checkpoint topic fails: "load kafka state: ... EOF" in issue 21) does
// not end the process: the service stays alive and not ready, retrying
// with backoff, and the aggregators start once the broker answers.
// dpsurv_ready equals /readyz throughout.
func TestAggregatorsStartRetriedWhileNotReady(t *testing.T) {
	t.Parallel()
	cfg := e2eConfig(nil, "startretry", pipelinetest.Cohorts, "out")
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Aggregators = []app.AggregatorConfig{{Name: "km", Kind: "km", Epsilon: 1,
		Window: app.WindowConfig{Size: time.Hour}, Params: aggregators.KMParams{BinWidth: 20, Method: "noisy-histogram"}}}
	cfg.Ledger = app.LedgerConfig{Topic: "dpsurv.ledger", Budget: map[string]float64{"stream": 10}, CheckpointInterval: time.Hour}
	f := apptest.New(t, cfg, apptest.Timeout(90*time.Second), apptest.Key(bytes.Repeat([]byte{3}, 32)), apptest.NoValidate())
	state := f.Config.LedgerStateTopic()

	// The outage: the broker drops the connection of every ListOffsets
	// that names the checkpoint topic.
	var down atomic.Bool
	var refused atomic.Int64
	down.Store(true)
	kf := f.Cluster.Kfake()
	kf.ControlKey(kmsg.ListOffsets.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if !down.Load() {
			return nil, nil, false
		}
		for _, tp := range req.(*kmsg.ListOffsetsRequest).Topics {
			if tp.Topic == state {
				refused.Add(1)
				return nil, errors.New("outage"), true
			}
		}
		return nil, nil, false
	})

	logs := f.Logs
	// A 10 ms first backoff (500 ms in production) reaches three failed
	// starts sooner, and the start after the outage too; the retries still
	// back off, doubling.
	svc := f.Run(func(s *app.Service) {
		s.Mem, s.AggregatorTick, s.RetryBackoff = nil, 20*time.Millisecond, 10*time.Millisecond
	})
	reg := svc.Registry
	svc.WaitFor(30*time.Second, "three failed starts of the aggregators", func() bool { return refused.Load() >= 3 })
	svc.WaitFor(10*time.Second, "the health server", func() bool { return svc.HealthAddr() != "" })
	for range 5 {
		rz, m := readyzAndMetric(t, svc.HealthAddr(), reg)
		if rz || m != 0 {
			t.Fatalf("during the outage /readyz ready=%v, dpsurv_ready=%v: want not ready, 0", rz, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "aggregators could not start; not ready, retrying") {
		t.Errorf("no retry logged:\n%s", logs.Tail())
	}
	down.Store(false)
	svc.WaitFor(40*time.Second, "the service to be ready after the outage", svc.Ready)
	svc.WaitFor(10*time.Second, "/readyz and dpsurv_ready to agree on ready", func() bool {
		rz, m := readyzAndMetric(t, svc.HealthAddr(), reg)
		return rz && m == 1
	})
	select {
	case <-svc.Exited():
		t.Fatalf("the service exited: %v", svc.Wait())
	default:
	}
	t.Logf("%d checkpoint reads refused before the outage ended", refused.Load())
}
