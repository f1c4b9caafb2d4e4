package pipeline_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/internal/harness"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// stallPartition passes batches through, but until released the batches
// holding a message of partition never commit: that partition stalls on
// this replica while the others flow (what a reader stuck on one partition
// looks like from the group).
type stallPartition struct {
	pipeline.Source
	partition int
	released  func() bool
	held      atomic.Int64
}

func (s *stallPartition) ReadBatch(ctx context.Context) (sources.Batch, error) {
	b, err := s.Source.ReadBatch(ctx)
	if err != nil || s.released() {
		return b, err
	}
	for _, m := range b.Messages {
		if m.Partition == s.partition {
			s.held.Add(1)
			b.Ack = func(context.Context) error { return nil }
			break
		}
	}
	return b, err
}

// A partition assigned to this replica that stops moving for
// input.stall_timeout makes the replica restart its reader (leave and
// rejoin the group), after which the partition is consumed from its
// committed offset: it recovers without a restart of the service.
func TestStalledAssignedPartitionRestartsReader(t *testing.T) {
	testtier.Full(t, "consumer-group stall recovery test (~15 s)")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := broker.StartForTest(t, broker.Options{Partitions: 2})
	cfg := reliabConfig(t, cl, "heal")
	cfg.Input.Partitions = 2
	cfg.Input.MaxBatch = 1 // a batch never mixes partitions
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Input.RebalanceTimeout = 6 * time.Second
	cfg.Input.StallTimeout = 2 * time.Second
	if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{cfg.Input.Topic: 2, cfg.Output.SanitizedTopic: 2, cfg.Output.DeadLetterTopic: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var msgs []sinks.Message
	for i := range 20 {
		msgs = append(msgs, sinks.Message{Key: []byte(fmt.Sprintf("key-%d", i)), Value: rowsMessage(t, seqIDs(fmt.Sprintf("h%d-", i), 5), false)})
	}
	if err := harness.Produce(ctx, cfg.Kafka, cfg.Input.Topic, msgs, zap.NewNop()); err != nil {
		t.Fatal(err)
	}

	svc := &pipeline.Service{Config: cfg, Key: reliabKey, Log: zap.NewNop(), Mem: memory.NewGoAllocator()}
	var stall *stallPartition
	svc.WrapSource = func(s pipeline.Source) pipeline.Source {
		stall = &stallPartition{Source: s, partition: 1, released: func() bool { return counterValue(svc.Metrics().ReaderRestarts) > 0 }}
		return stall
	}
	done, _ := startService(t, ctx, svc)
	start := time.Now()
	waitUntil(t, done, 40*time.Second, "every message read, partition 1 held", func() bool {
		return stall != nil && stall.held.Load() > 0 && svc.Acked() == int64(len(msgs))
	})
	waitUntil(t, done, 40*time.Second, "a reader restart, then both partitions committed to their end, nothing stalled, ready", func() bool {
		m := svc.Metrics()
		if counterValue(m.ReaderRestarts) < 1 || gaugeValue(m.StalledPartitions) != 0 || !svc.Ready() {
			return false
		}
		pl, err := kafkaconn.GroupLag(ctx, cfg.Kafka, cfg.Input.GroupID, cfg.Input.Topic)
		if err != nil {
			return false
		}
		for _, p := range pl {
			if p.Lag() > 0 {
				return false
			}
		}
		return true
	})
	if n := counterValue(svc.Metrics().ReaderRestarts); n != 1 {
		t.Errorf("dpsurv_reader_restarts_total = %v, want 1", n)
	}
	t.Logf("partition 1 held (%d messages never committed); recovered by %v reader restart(s), all committed %v after start; %d messages acknowledged (the held ones twice)",
		stall.held.Load(), counterValue(svc.Metrics().ReaderRestarts), time.Since(start).Round(100*time.Millisecond), svc.Acked())
}
