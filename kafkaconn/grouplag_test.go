package kafkaconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/sources"
)

// GroupLag measures against the last stable offset: records of an open
// transaction are not lag (a read_committed consumer cannot reach them, so
// counting them would call the partition stalled while the transaction is
// open); once it commits they are.
func TestGroupLagAgainstLastStableOffset(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"tx": 1}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("open"), kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A member in the group (its committed offsets are then "none").
	src, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: "tx", GroupID: "g"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	if _, err := kafkaconn.WaitForGroup(ctx, conn, "g", "tx", 1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	lag, err := kafkaconn.GroupLag(ctx, conn, "g", "tx")
	if err != nil {
		t.Fatal(err)
	}
	if len(lag) != 1 || lag[0].End != 0 || lag[0].Lag() != 0 {
		t.Fatalf("group lag with an open 3-record transaction: %+v, want end 0 (the last stable offset), lag 0", lag)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	lag, err = kafkaconn.GroupLag(ctx, conn, "g", "tx")
	if err != nil {
		t.Fatal(err)
	}
	if len(lag) != 1 || lag[0].End != 4 || lag[0].Lag() != 4 {
		t.Fatalf("group lag after the commit: %+v, want end 4 (3 records and the marker), lag 4", lag)
	}
}
