package sources_test

import (
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sources"
)

// MemberID is the member id the coordinator knows the reader by (the
// generation's, from kafka-go's ConsumerGroup),
// and Restart rejoins as a new member: a ReadBatch blocked on the old
// reader continues on the new one, which resumes from the committed
// offsets (acknowledged messages are not redelivered, the rest are).
func TestRestartRejoinsAndResumes(t *testing.T) {
	t.Parallel()
	cl, _ := brokertest.Start(t, broker.Options{Partitions: 2})
	conn := kafkaconn.Config{Brokers: cl.Addrs(), ClientID: "restart"}
	ctx := testCtx(t, 60*time.Second)
	const topic, group = "restart.in", "restart"
	if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{topic: 2}, nil); err != nil {
		t.Fatal(err)
	}
	produce(t, conn, topic, "a", 0, 10)
	k := newSource(t, sources.KafkaConfig{Conn: conn, Topic: topic, GroupID: group, MaxBatch: 1})
	if k.MemberID() != "" {
		t.Fatalf("member id %q before joining", k.MemberID())
	}
	got := readN(ctx, t, k, 10, true)
	first := k.MemberID()
	owners, state, err := kafkaconn.GroupOwners(ctx, conn, group, topic)
	if err != nil || state != "Stable" || owners.Partitions[0] != first || owners.Partitions[1] != first {
		t.Fatalf("member id %q; group %s %+v (%v): want it to hold both partitions", first, state, owners, err)
	}

	// A read blocked on the old reader while it is replaced.
	type res struct {
		b   message.Batch
		err error
	}
	blocked := make(chan res, 1)
	go func() {
		b, err := k.ReadBatch(ctx)
		blocked <- res{b, err}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := k.Restart(); err != nil {
		t.Fatal(err)
	}
	if k.Restarts() != 1 {
		t.Fatalf("Restarts = %d, want 1", k.Restarts())
	}
	produce(t, conn, topic, "b", 0, 1)
	var r res
	select {
	case r = <-blocked:
	case <-ctx.Done():
		t.Fatal("the blocked ReadBatch never returned after the restart")
	}
	if r.err != nil {
		t.Fatalf("blocked ReadBatch across a restart: %v", r.err)
	}
	if v := string(r.b.Messages[0].Value); v != "b-0" {
		t.Fatalf("after the restart read %q, want b-0 (a-* were acknowledged; read so far %v)", v, got)
	}
	if err := r.b.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	second := k.MemberID()
	if second == "" || second == first {
		t.Fatalf("member id after restart %q, before %q: want a new member", second, first)
	}
	owners, state, err = kafkaconn.GroupOwners(ctx, conn, group, topic)
	if err != nil || state != "Stable" || owners.Members[first] || !owners.Members[second] {
		t.Fatalf("group %s %+v (%v): want only the new member %s", state, owners, err, second)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if err := k.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
}
