package kafkaconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/sources"
)

// TestWaitForGroup watches a consumer group form on the broker: one reader
// joins and owns all partitions. (The timeout and its message are
// TestWaitForGroupTimeoutAndPolling's, on a fake clock.)
func TestWaitForGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	_, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"g.in": 3}})
	src, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: "g.in", GroupID: "g"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	// The reader joins in the background once it is asked for data.
	rctx, stopRead := context.WithCancel(ctx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = src.ReadBatch(rctx)
	}()
	t.Cleanup(func() { stopRead(); <-readDone })

	st, err := kafkaconn.WaitForGroup(ctx, conn, "g", "g.in", 1, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "Stable" || len(st.Members) != 1 || len(st.Members[0].Partitions) != 3 || st.Assigned() != 1 {
		t.Fatalf("group %+v, want one member with partitions 0-2", st)
	}
	if st, err := kafkaconn.DescribeGroup(ctx, conn, "no-such-group", "g.in"); err != nil || len(st.Members) != 0 {
		t.Fatalf("unknown group: %+v, %v; want no members and no error", st, err)
	}
}
