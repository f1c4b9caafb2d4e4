package apptest_test

import (
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
)

// Start gives a running service on its own broker with the input topic
// made: records produced through the fixture come out on the sanitized
// topic, the service's metrics count them, and Stop ends Run cleanly
// (twice: the same answer), leaving nothing allocated.
func TestStartRunsServiceOnItsOwnBroker(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Kafka.ClientID = "fixture"
	cfg.Input = app.InputConfig{Topic: "in", GroupID: "fixture", Format: "arrow", MaxBatch: 8, Partitions: 2}
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: pipelinetest.Cohorts, Public: []string{"event"}}
	cfg.Sanitizers.KeyFile = "(test)"
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	cfg.Output = app.OutputConfig{SanitizedTopic: "out", DeadLetterTopic: "dlq"}
	cfg.HTTP.Listen = ""
	f, svc := apptest.Start(t, cfg, apptest.Partitions(2))
	if f.Cluster == nil || len(f.Config.Kafka.Brokers) == 0 {
		t.Fatalf("no broker started (cluster %v, brokers %v)", f.Cluster, f.Config.Kafka.Brokers)
	}
	f.Produce("in", []message.Message{{Key: []byte("k"), Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("p-", 5), false)}})
	svc.WaitFor(30*time.Second, "five records out", func() bool {
		return svc.Metric("dpsurv_records_out_total", nil) == 5
	})
	if got := f.Read("out", "fixture-reader").Next(); len(got) == 0 {
		t.Fatal("nothing read from the sanitized topic")
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-svc.Exited():
	default:
		t.Fatal("Stop returned before Run did")
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	f.Mem.AssertSize(t, 0)
}
