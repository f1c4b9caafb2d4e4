package ops_test

import (
	"context"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/message"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/ops/harness"
)

// TestOpsReplicasSharePartitions runs two services in one consumer group.
// In a stable group each owns two of the four input partitions and
// together they sanitize every record exactly as one process would; when a
// replica joins mid-stream and the first one leaves mid-stream (a rolling
// restart, scale up then down), nothing is lost and every redelivered
// message is byte-identical to its first copy.
func TestOpsReplicasSharePartitions(t *testing.T) {
	testtier.Full(t, "replica test")
	tests := []struct {
		name string
		// rolling: start one replica, produce, add the second halfway, stop
		// the first at three quarters.
		rolling bool
	}{
		{name: "stable group", rolling: false},
		{name: "join and leave mid-stream", rolling: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			t.Cleanup(cancel)
			_, conn := brokertest.Start(t, broker.Options{Partitions: 4})
			conn.ClientID = "ops-replicas"
			group := "ops-replicas"
			cfg := opsConfig(conn, group)
			opsEnsureTopics(t, ctx, conn, cfg)
			in := opsNewInput(t, cfg, opsKey, 6000, 25, uint64(20+i), "rep")

			tracked := [2]*ops.TrackedSource{{}, {}}
			svcs := [2]*app.Service{}
			for r := range svcs {
				c := cfg
				c.HTTP.Listen = ""
				svcs[r] = &app.Service{Config: c, Key: opsKey, Transport: apptest.Kafka(c, func(role app.Role, s message.Source) message.Source {
					if role != app.RoleInput {
						return s
					}
					tracked[r].Source = s
					return tracked[r]
				}, nil)}
			}
			stop0, done0 := opsRunService(t, ctx, svcs[0])
			var stop1 func() error
			var done1 <-chan struct{}
			if !tc.rolling {
				stop1, done1 = opsRunService(t, ctx, svcs[1])
				st, err := kafkaconn.WaitForGroup(ctx, conn, group, cfg.Input.Topic, 2, 40*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range st.Members {
					if len(m.Partitions) != 2 {
						t.Fatalf("member owns partitions %v, want 2 of 4", m.Partitions)
					}
				}
				if err := harness.Produce(ctx, conn, cfg.Input.Topic, in.msgs, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := kafkaconn.WaitForGroup(ctx, conn, group, cfg.Input.Topic, 1, 40*time.Second); err != nil {
					t.Fatal(err)
				}
				prodErr := make(chan error, 1)
				// One message every 40 ms: about 10 s of stream, long enough
				// for a join and a leave (each a rebalance of a few seconds).
				go func() { prodErr <- opsProduceAt(ctx, conn, cfg.Input.Topic, in.msgs, 1, 40*time.Millisecond) }()
				n := len(in.msgs)
				if !harness.WaitFor(ctx, 30*time.Second, func() bool { return tracked[0].Stats().AckedMessages >= n/6 }) {
					t.Fatalf("first replica acked %d of %d", tracked[0].Stats().AckedMessages, n)
				}
				stop1, done1 = opsRunService(t, ctx, svcs[1])
				if _, err := kafkaconn.WaitForGroup(ctx, conn, group, cfg.Input.Topic, 2, 40*time.Second); err != nil {
					t.Fatal(err)
				}
				if !harness.WaitFor(ctx, 30*time.Second, func() bool { return tracked[1].Stats().AckedMessages > 0 }) {
					t.Fatal("second replica never acknowledged a batch after joining")
				}
				if err := stop0(); err != nil {
					t.Fatalf("first replica stopped with %v", err)
				}
				if tracked[0].Stats().AckedMessages >= n {
					t.Fatal("the first replica consumed everything before it left: no stream left to hand over")
				}
				if err := <-prodErr; err != nil {
					t.Fatal(err)
				}
			}
			out := opsCollectExact(t, ctx, conn, cfg.Output.SanitizedTopic, "ops-replicas-reader", in.want)
			select {
			case <-done0:
				if !tc.rolling {
					t.Fatal("replica 0 exited while running")
				}
			case <-done1:
				t.Fatal("replica 1 exited while running")
			default:
			}
			if err := stop1(); err != nil {
				t.Fatalf("replica 1: %v", err)
			}
			if err := stop0(); err != nil {
				t.Fatalf("replica 0: %v", err)
			}
			s0, s1 := tracked[0].Stats(), tracked[1].Stats()
			if s0.AckedMessages == 0 || s1.AckedMessages == 0 {
				t.Fatalf("acked messages per replica %d and %d: both must work", s0.AckedMessages, s1.AckedMessages)
			}
			if s0.AckedMessages+s1.AckedMessages < len(in.msgs) {
				t.Fatalf("replicas acked %d messages, %d were produced", s0.AckedMessages+s1.AckedMessages, len(in.msgs))
			}
			if !tc.rolling {
				for p := range s0.PerPartition {
					if s1.PerPartition[p] > 0 {
						t.Errorf("partition %d read by both replicas of a stable group", p)
					}
				}
				if len(s0.PerPartition)+len(s1.PerPartition) != 4 {
					t.Errorf("partitions read %v and %v, want all 4 split between them", s0.PerPartition, s1.PerPartition)
				}
				if out.Duplicates != 0 {
					t.Errorf("%d duplicates in a stable group without failures", out.Duplicates)
				}
			}
			t.Logf("replica messages %d + %d (of %d); partitions %v / %v; %d distinct sanitized messages, %d redelivered (identical)",
				s0.AckedMessages, s1.AckedMessages, len(in.msgs), s0.PerPartition, s1.PerPartition, out.Distinct, out.Duplicates)
		})
	}
}
