package sources_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/internal/testtier"

	"go.uber.org/zap/zaptest"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// produce writes values "<prefix>-<i>" for i in [from, to) with key "k<i>".
func produce(t *testing.T, conn kafkaconn.Config, topic, prefix string, from, to int) {
	t.Helper()
	s, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: topic}, nil)
	if err != nil {
		t.Fatalf("new sink: %v", err)
	}
	defer s.Close()
	msgs := make([]message.Message, 0, to-from)
	for i := from; i < to; i++ {
		msgs = append(msgs, message.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Write(ctx, msgs); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func newSource(t *testing.T, cfg sources.KafkaConfig) *sources.Kafka {
	t.Helper()
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 200 * time.Millisecond
	}
	if cfg.FetchMaxWait == 0 {
		cfg.FetchMaxWait = 200 * time.Millisecond
	}
	k, err := sources.NewKafka(cfg, zaptest.NewLogger(t).Named(cfg.GroupID))
	if err != nil {
		t.Fatalf("new source: %v", err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// readN reads batches until n distinct values are seen, acking each batch
// when ack is true. It returns the batches' values in read order.
func readN(ctx context.Context, t *testing.T, k *sources.Kafka, n int, ack bool) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	for len(seen) < n {
		b, err := k.ReadBatch(ctx)
		if err != nil {
			t.Fatalf("ReadBatch after %d of %d values: %v", len(seen), n, err)
		}
		for _, m := range b.Messages {
			out = append(out, string(m.Value))
			seen[string(m.Value)] = true
		}
		if ack {
			if err := b.Ack(ctx); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
	}
	return out
}

func values(prefix string, from, to int) []string {
	var v []string
	for i := from; i < to; i++ {
		v = append(v, fmt.Sprintf("%s-%d", prefix, i))
	}
	return v
}

func setOf(v []string) map[string]bool {
	m := make(map[string]bool, len(v))
	for _, s := range v {
		m[s] = true
	}
	return m
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestReadAckCommits(t *testing.T) {
	t.Parallel()
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"in": 4}})
	const n = 500
	produce(t, conn, "in", "v", 0, n)
	ctx := testCtx(t, 30*time.Second)
	k := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "g", MaxBatch: 32})

	got := map[string]bool{}
	perPart := map[int]int64{} // partition -> next expected offset
	batches := 0
	for len(got) < n {
		b, err := k.ReadBatch(ctx)
		if err != nil {
			t.Fatalf("ReadBatch: %v", err)
		}
		batches++
		if len(b.Messages) == 0 || len(b.Messages) > 32 {
			t.Fatalf("batch of %d messages, want 1..32", len(b.Messages))
		}
		for _, m := range b.Messages {
			if got[string(m.Value)] {
				t.Errorf("duplicate %s without any failure", m.Value)
			}
			got[string(m.Value)] = true
			if m.Topic != "in" || m.Offset != perPart[m.Partition] {
				t.Errorf("message %s at %s/%d@%d, want offset %d", m.Value, m.Topic, m.Partition, m.Offset, perPart[m.Partition])
			}
			perPart[m.Partition] = m.Offset + 1
		}
		if err := b.Ack(ctx); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if len(perPart) != 4 {
		t.Errorf("messages came from %d partitions, want 4", len(perPart))
	}
	if lag := k.Lag(); lag != 0 {
		t.Errorf("Lag after reading everything = %d, want 0", lag)
	}
	// The group's committed offsets equal the partitions' ends.
	info := c.Kfake().GroupInfo("g")
	if info == nil {
		t.Fatal("group g does not exist")
	}
	for _, p := range c.Kfake().PartitionInfos("in") {
		if got := info.Commits["in"][p.Partition].Offset; got != p.HighWatermark {
			t.Errorf("partition %d committed %d, want high watermark %d", p.Partition, got, p.HighWatermark)
		}
	}
	t.Logf("%d messages in %d batches", n, batches)
}

func TestReadBatchCancelAndClose(t *testing.T) {
	t.Parallel()
	c, _ := brokertest.Start(t, broker.Options{Topics: map[string]int{"empty": 2}})
	k := newSource(t, sources.KafkaConfig{Conn: kafkaconn.Config{Brokers: c.Addrs()}, Topic: "empty", GroupID: "g"})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := k.ReadBatch(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadBatch on an empty topic = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("ReadBatch returned %v after the deadline", d)
	}
	if err := k.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := k.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	if _, err := k.ReadBatch(ctx2); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadBatch after Close = %v, want a reader-closed error", err)
	}
}

// A consumer closed mid-stream without acking its last batches: a new
// consumer in the same group gets exactly the un-acked messages again.
func TestRedeliveryAfterCloseWithoutAck(t *testing.T) {
	t.Parallel()
	_, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"in": 3}})
	const n = 300
	produce(t, conn, "in", "v", 0, n)
	ctx := testCtx(t, 40*time.Second)

	a := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "g", MaxBatch: 16})
	acked := setOf(readN(ctx, t, a, 120, true))
	var unacked []string
	for range 2 { // read, never ack
		b, err := a.ReadBatch(ctx)
		if err != nil {
			t.Fatalf("ReadBatch: %v", err)
		}
		for _, m := range b.Messages {
			unacked = append(unacked, string(m.Value))
		}
	}
	if err := a.Close(); err != nil {
		t.Fatalf("close a: %v", err)
	}

	b := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "g", MaxBatch: 16})
	rest := setOf(readN(ctx, t, b, n-len(acked), true))
	for v := range rest {
		if acked[v] {
			t.Errorf("acked message %s delivered again", v)
		}
	}
	for _, v := range unacked {
		if !rest[v] {
			t.Errorf("un-acked message %s not redelivered", v)
		}
	}
	for _, v := range values("v", 0, n) {
		if !acked[v] && !rest[v] {
			t.Errorf("message %s lost", v)
		}
	}
	t.Logf("acked %d, un-acked at close %d, redelivered+rest %d", len(acked), len(unacked), len(rest))
}

// Two consumers in one group split the partitions and together see every
// message, while messages keep arriving through the rebalance.
func TestRebalanceTwoConsumers(t *testing.T) {
	t.Parallel()
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"in": 4}})
	ctx := testCtx(t, 50*time.Second)
	const rounds, per = 10, 40
	const n = rounds * per

	var mu sync.Mutex
	seenBy := map[string]map[string]bool{"a": {}, "b": {}}
	union := map[string]bool{}
	done := make(chan struct{})
	var doneOnce sync.Once
	var wg sync.WaitGroup
	run := func(name string, k *sources.Kafka) {
		defer wg.Done()
		for {
			b, err := k.ReadBatch(ctx)
			if err != nil {
				select {
				case <-done:
				default:
					if ctx.Err() == nil {
						t.Errorf("%s: ReadBatch: %v", name, err)
					}
				}
				return
			}
			mu.Lock()
			for _, m := range b.Messages {
				seenBy[name][string(m.Value)] = true
				union[string(m.Value)] = true
			}
			complete := len(union) == n
			mu.Unlock()
			if err := b.Ack(ctx); err != nil {
				// A commit racing a rebalance may fail; the messages
				// are then delivered again, which the test tolerates.
				t.Logf("%s: ack: %v", name, err)
			}
			if complete {
				doneOnce.Do(func() { close(done) })
			}
		}
	}
	a := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "g", MaxBatch: 8})
	wg.Add(1)
	go run("a", a)
	produce(t, conn, "in", "v", 0, per)
	b := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "g", MaxBatch: 8})
	wg.Add(1)
	go run("b", b)
	for r := 1; r < rounds; r++ {
		produce(t, conn, "in", "v", r*per, (r+1)*per)
		time.Sleep(100 * time.Millisecond)
	}
	info, err := c.Kfake().WaitGroupStable(ctx, "g", 2)
	if err != nil {
		t.Fatalf("group never stable with 2 members: %v", err)
	}
	for _, m := range info.Members {
		if m.NumAssigned() != 2 {
			t.Errorf("member %s has %d partitions, want 2 of 4", m.MemberID, m.NumAssigned())
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	// Stop both readers: cancel their reads by closing them.
	_ = a.Close()
	_ = b.Close()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var missing []string
	for _, v := range values("v", 0, n) {
		if !union[v] {
			missing = append(missing, v)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d messages seen by neither consumer, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}
	if len(seenBy["a"]) == 0 || len(seenBy["b"]) == 0 {
		t.Errorf("one consumer saw nothing: a=%d b=%d", len(seenBy["a"]), len(seenBy["b"]))
	}
	t.Logf("a saw %d, b saw %d, union %d of %d", len(seenBy["a"]), len(seenBy["b"]), len(union), n)
}

// With a DataDir, records and committed offsets survive a broker restart.
func TestBrokerRestartKeepsRecordsAndOffsets(t *testing.T) {
	t.Parallel()
	testtier.Full(t, "broker-restart fault test")
	dir := t.TempDir()
	c1, err := broker.Start(broker.Options{DataDir: dir, Topics: map[string]int{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c1.Close() })
	conn := kafkaconn.Config{Brokers: c1.Addrs()}
	const n = 200
	produce(t, conn, "in", "v", 0, n)
	ctx := testCtx(t, 40*time.Second)
	a := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "g", MaxBatch: 10})
	acked := setOf(readN(ctx, t, a, 80, true))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	before := c1.Kfake().GroupInfo("g").Commits["in"]
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}

	c2, _ := brokertest.Start(t, broker.Options{DataDir: dir, Topics: map[string]int{"in": 2, "new": 1}})
	conn2 := kafkaconn.Config{Brokers: c2.Addrs()}
	info := c2.Kfake().GroupInfo("g")
	if info == nil {
		t.Fatal("group g lost across the restart")
	}
	for p, oc := range before {
		if got := info.Commits["in"][p].Offset; got != oc.Offset {
			t.Errorf("partition %d committed offset %d after restart, want %d", p, got, oc.Offset)
		}
	}
	if len(c2.Kfake().PartitionInfos("new")) != 1 {
		t.Error("topic added in Options.Topics on restart was not created")
	}
	// Same group: exactly the un-acked records.
	b := newSource(t, sources.KafkaConfig{Conn: conn2, Topic: "in", GroupID: "g", MaxBatch: 10})
	rest := setOf(readN(ctx, t, b, n-len(acked), true))
	for v := range rest {
		if acked[v] {
			t.Errorf("acked message %s delivered again after restart", v)
		}
	}
	// New group: every record.
	all := newSource(t, sources.KafkaConfig{Conn: conn2, Topic: "in", GroupID: "fresh", MaxBatch: 50})
	got := setOf(readN(ctx, t, all, n, false))
	for _, v := range values("v", 0, n) {
		if !got[v] {
			t.Errorf("record %s lost across the restart", v)
		}
	}
}

func TestAckOrderAndLag(t *testing.T) {
	t.Parallel()
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"one": 1}})
	produce(t, conn, "one", "v", 0, 100)
	ctx := testCtx(t, 30*time.Second)
	k := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "one", GroupID: "g", MaxBatch: 10, MaxWait: 200 * time.Millisecond})
	b1, err := k.ReadBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b1.Messages) != 10 {
		t.Fatalf("first batch has %d messages, want 10 (100 available)", len(b1.Messages))
	}
	if lag := k.Lag(); lag != 90 {
		t.Errorf("Lag after 10 of 100 = %d, want 90", lag)
	}
	b2, err := k.ReadBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b1.Ack(ctx); err != nil { // older batch acked late: no-op
		t.Fatal(err)
	}
	want := b2.Messages[len(b2.Messages)-1].Offset + 1
	if got := c.Kfake().GroupInfo("g").Commits["one"][0].Offset; got != want {
		t.Errorf("committed offset %d, want %d (a late ack must not move it back)", got, want)
	}
}

func TestNewKafkaValidation(t *testing.T) {
	t.Parallel()
	conn := kafkaconn.Config{Brokers: []string{"127.0.0.1:9092"}}
	tests := []struct {
		name string
		cfg  sources.KafkaConfig
	}{
		{"no topic", sources.KafkaConfig{Conn: conn, GroupID: "g"}},
		{"no group", sources.KafkaConfig{Conn: conn, Topic: "t"}},
		{"bad start offset", sources.KafkaConfig{Conn: conn, Topic: "t", GroupID: "g", StartOffset: "middle"}},
		{"negative batch", sources.KafkaConfig{Conn: conn, Topic: "t", GroupID: "g", MaxBatch: -1}},
		{"negative wait", sources.KafkaConfig{Conn: conn, Topic: "t", GroupID: "g", MaxWait: -time.Second}},
		{"bad conn", sources.KafkaConfig{Topic: "t", GroupID: "g"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := sources.NewKafka(tc.cfg, nil)
			if err == nil {
				_ = k.Close()
				t.Fatal("NewKafka succeeded")
			}
		})
	}
	k, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: "t", GroupID: "g", StartOffset: "latest"}, nil)
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}

// TLS + SCRAM end to end: the reader's Dialer and the writer's Transport
// both authenticate.
func TestReadOverTLSAndSASL(t *testing.T) {
	t.Parallel()
	_, conn := brokertest.StartSCRAMOverTLS(t, "SCRAM-SHA-256", true, broker.Options{Topics: map[string]int{"in": 2}})
	produce(t, conn, "in", "s", 0, 50)
	ctx := testCtx(t, 30*time.Second)
	k := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "g"})
	got := setOf(readN(ctx, t, k, 50, true))
	if len(got) != 50 {
		t.Fatalf("read %d of 50", len(got))
	}
}

// A rejected credential surfaces from ReadBatch as kafkaconn.ErrAuth, not
// as a hang.
func TestReadBatchWrongPassword(t *testing.T) {
	t.Parallel()
	testtier.Full(t, "authentication-retry test (waits out a 10 s backoff)")
	c, _ := brokertest.Start(t, broker.Options{
		SASL:   []broker.SASLUser{{Mechanism: "SCRAM-SHA-512", User: "u", Password: "right"}},
		Topics: map[string]int{"in": 1},
	})
	k := newSource(t, sources.KafkaConfig{Topic: "in", GroupID: "g", Conn: kafkaconn.Config{Brokers: c.Addrs(),
		SASL: kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: "u", Password: "wrong"}}})
	ctx := testCtx(t, 30*time.Second)
	_, err := k.ReadBatch(ctx)
	if !errors.Is(err, kafkaconn.ErrAuth) || !errors.Is(err, message.ErrFatal) {
		t.Fatalf("ReadBatch with a wrong password = %v, want kafkaconn.ErrAuth marked message.ErrFatal", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error leaks the password: %v", err)
	}
}

// Connect dials and authenticates: nil with the right credential, an
// error marked message.ErrFatal (kafkaconn.ErrAuth) with a wrong one, and
// one marked message.ErrNotConnected when no broker answers.
func TestConnect(t *testing.T) {
	t.Parallel()
	c, _ := brokertest.Start(t, broker.Options{
		SASL:   []broker.SASLUser{brokertest.ConnectUser},
		Topics: map[string]int{"in": 1},
	})
	for _, tc := range brokertest.ConnectCases(t, c.Addrs()) {
		t.Run(tc.Name, func(t *testing.T) {
			k := newSource(t, sources.KafkaConfig{Topic: "in", GroupID: "g", Conn: tc.Conn})
			err := k.Connect(testCtx(t, 20*time.Second))
			brokertest.CheckConnect(t, err, tc.Want)
			if err != nil && strings.Contains(err.Error(), "wrong") {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}
