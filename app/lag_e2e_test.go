package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/sources"
)

// Defect 5: a partition held by a group member that does not consume it
// (hung, or a broker-side stall) left the live replica reporting ready=1
// and consumer_lag=0, since its lag covered its own partitions only. Lag
// now compares the group's committed offsets with every partition's end
// offset, and a partition whose committed offset stays behind for
// input.stall_timeout makes the service not ready.
func TestUnconsumedPartitionShowsInLagAndReadiness(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("consumer-group rebalance test (~15 s): full tier only")
	}
	f := reliabFixture(t, "stall", 90*time.Second, func(cfg *app.Config) {
		cfg.Input.Partitions = 2
		cfg.Input.SessionTimeout = 6 * time.Second
		// The stall timeout exceeds the service's first join (the coordinator
		// waits for the member already in the group, which heartbeats every
		// second): a stall seen before the service holds its partition would
		// make it restart its reader at once, and a reshuffled group can hand
		// it both partitions, so that the held-partition state is never seen.
		cfg.Input.StallTimeout = 6 * time.Second
	})
	ctx, cfg := f.Ctx, f.Config
	msgs := produceKeyed(f, "s", 20)
	// A member of the same group that takes a partition and never commits.
	zombie, err := sources.NewKafka(sources.KafkaConfig{Conn: cfg.Kafka, Topic: cfg.Input.Topic, GroupID: cfg.Input.GroupID,
		SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 10 * time.Second}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	zctx, zcancel := context.WithCancel(ctx)
	zdone := make(chan struct{})
	go func() {
		defer close(zdone)
		for zctx.Err() == nil {
			if _, err := zombie.ReadBatch(zctx); err != nil && zctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	stopZombie := func() { zcancel(); <-zdone; _ = zombie.Close() }
	defer func() {
		if zctx.Err() == nil {
			stopZombie()
		}
	}()
	if _, err := kafkaconn.WaitForGroup(ctx, cfg.Kafka, cfg.Input.GroupID, cfg.Input.Topic, 1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	svc := runQuiet(f)
	svc.WaitFor(40*time.Second, "the service to consume its own partition", func() bool { return svc.Acked() > 0 })
	// Once the service has committed its own partition, what remains is
	// exactly the held partition: lag > 0 but below the total, one stalled
	// partition, not ready.
	svc.WaitFor(30*time.Second, "lag of the held partition only, one stalled partition and not ready", func() bool {
		m := svc.Metrics()
		lag := pipelinetest.Value(m.ConsumerLag)
		return lag > 0 && lag < float64(len(msgs)) && pipelinetest.Value(m.StalledPartitions) == 1 && !svc.Ready()
	})
	t.Logf("with one partition held and not consumed: consumer_lag %v, stalled %v, ready %v, acked %d, commit errors %v",
		pipelinetest.Value(svc.Metrics().ConsumerLag), pipelinetest.Value(svc.Metrics().StalledPartitions), svc.Ready(), svc.Acked(), pipelinetest.Value(svc.Metrics().CommitErrors))
	if st, err := kafkaconn.DescribeGroup(ctx, cfg.Kafka, cfg.Input.GroupID, cfg.Input.Topic); err == nil {
		t.Logf("group: %+v", st)
	}
	if lag, err := kafkaconn.GroupLag(ctx, cfg.Kafka, cfg.Input.GroupID, cfg.Input.Topic); err == nil {
		t.Logf("lag: %+v", lag)
	}
	stopZombie()
	start := time.Now()
	// At least once: a message the service read before one of its reader
	// restarts (the monitor's heal) may be read and acknowledged again, so
	// Acked can exceed the messages produced; lag 0 is what says all of
	// them are committed.
	svc.WaitFor(60*time.Second, "every message consumed, lag 0 and ready again", func() bool {
		m := svc.Metrics()
		return svc.Acked() >= int64(len(msgs)) && pipelinetest.Value(m.ConsumerLag) == 0 && pipelinetest.Value(m.StalledPartitions) == 0 && svc.Ready()
	})
	t.Logf("after the stuck member left: all consumed and ready in %v", time.Since(start).Round(100*time.Millisecond))
}
