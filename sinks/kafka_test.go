package sinks_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newSink(t *testing.T, cfg sinks.KafkaConfig) *sinks.Kafka {
	t.Helper()
	s, err := sinks.NewKafka(cfg, nil)
	if err != nil {
		t.Fatalf("new sink: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readAll reads n messages from topic with a fresh consumer group.
func readAll(ctx context.Context, t *testing.T, conn kafkaconn.Config, topic string, n int) []message.Message {
	t.Helper()
	k, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: topic, GroupID: "reader-" + topic,
		MaxBatch: 256, FetchMaxWait: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var out []message.Message
	for len(out) < n {
		b, err := k.ReadBatch(ctx)
		if err != nil {
			t.Fatalf("read %d of %d: %v", len(out), n, err)
		}
		out = append(out, b.Messages...)
	}
	return out
}

func highWatermarks(c *broker.Cluster, topic string) int64 {
	var sum int64
	for _, p := range c.Kfake().PartitionInfos(topic) {
		sum += p.HighWatermark
	}
	return sum
}

// After Write returns, every message is in the broker's log; a key always
// lands on the same partition, the one kafka.Hash picks.
func TestKafkaWriteDurableAndKeyed(t *testing.T) {
	const parts = 4
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"out": parts}})
	ctx := testCtx(t, 30*time.Second)
	s1 := newSink(t, sinks.KafkaConfig{Conn: conn, Topic: "out"})
	s2 := newSink(t, sinks.KafkaConfig{Conn: conn, Topic: "out", BatchTimeout: 20 * time.Millisecond})

	const writes, per, keys = 20, 25, 13
	total := 0
	for w := range writes {
		msgs := make([]message.Message, per)
		for i := range msgs {
			id := w*per + i
			msgs[i] = message.Message{
				Key:     []byte(fmt.Sprintf("key-%d", id%keys)),
				Value:   []byte(fmt.Sprintf("value-%d", id)),
				Headers: []message.Header{{Key: "h", Value: []byte(fmt.Sprint(id))}},
			}
		}
		s := s1
		if w%2 == 1 {
			s = s2
		}
		if err := s.Write(ctx, msgs); err != nil {
			t.Fatalf("write %d: %v", w, err)
		}
		total += per
		if got := highWatermarks(c, "out"); got != int64(total) {
			t.Fatalf("after write %d returned the broker holds %d messages, want %d", w, got, total)
		}
	}

	msgs := readAll(ctx, t, conn, "out", total)
	keyPart := map[string]int{}
	seen := map[string]bool{}
	balancer := &kafka.Hash{}
	partitions := []int{0, 1, 2, 3}
	for _, m := range msgs {
		seen[string(m.Value)] = true
		if p, ok := keyPart[string(m.Key)]; ok && p != m.Partition {
			t.Errorf("key %s on partitions %d and %d", m.Key, p, m.Partition)
		}
		keyPart[string(m.Key)] = m.Partition
		if want := balancer.Balance(kafka.Message{Key: m.Key}, partitions...); m.Partition != want {
			t.Errorf("key %s on partition %d, kafka.Hash says %d", m.Key, m.Partition, want)
		}
		if len(m.Headers) != 1 || m.Headers[0].Key != "h" || !strings.HasSuffix(string(m.Value), "-"+string(m.Headers[0].Value)) {
			t.Errorf("message %s has headers %v", m.Value, m.Headers)
		}
	}
	if len(seen) != total {
		t.Errorf("read %d distinct values, want %d", len(seen), total)
	}
	used := map[int]bool{}
	for _, p := range keyPart {
		used[p] = true
	}
	if len(used) < 2 {
		t.Errorf("%d keys all on one partition", keys)
	}
}

func TestKafkaCompression(t *testing.T) {
	_, conn := brokertest.Start(t, broker.Options{})
	for _, comp := range []string{"", "none", "snappy", "lz4", "zstd", "gzip"} {
		t.Run("codec="+comp, func(t *testing.T) {
			topic := "c-" + comp
			if err := kafkaconn.EnsureTopics(testCtx(t, 10*time.Second), conn, map[string]int{topic: 2}, nil); err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t, 20*time.Second)
			s := newSink(t, sinks.KafkaConfig{Conn: conn, Topic: topic, Compression: comp})
			want := map[string]bool{}
			var msgs []message.Message
			for i := range 50 {
				v := fmt.Sprintf("%s-%d-%s", comp, i, strings.Repeat("x", 200))
				want[v] = true
				msgs = append(msgs, message.Message{Key: []byte(fmt.Sprint(i)), Value: []byte(v)})
			}
			if err := s.Write(ctx, msgs); err != nil {
				t.Fatal(err)
			}
			for _, m := range readAll(ctx, t, conn, topic, len(msgs)) {
				if !want[string(m.Value)] {
					t.Errorf("unexpected value %.20q", m.Value)
				}
				delete(want, string(m.Value))
			}
			if len(want) != 0 {
				t.Errorf("%d values not read back", len(want))
			}
		})
	}
}

func TestKafkaWriteErrors(t *testing.T) {
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"out": 1}})

	t.Run("message too large", func(t *testing.T) {
		s := newSink(t, sinks.KafkaConfig{Conn: conn, Topic: "out"})
		secret := bytes.Repeat([]byte("S"), 2<<20)
		err := s.Write(testCtx(t, 10*time.Second), []message.Message{{Value: []byte("ok")}, {Value: secret}})
		if err == nil {
			t.Fatal("2 MiB message accepted")
		}
		if !errors.Is(err, kafka.MessageSizeTooLarge) || !errors.Is(err, message.ErrTooLarge) || strings.Contains(err.Error(), "SSSS") {
			t.Errorf("error = %.200v, want MessageSizeTooLarge (marked message.ErrTooLarge) without content", err)
		}
	})
	t.Run("broker limit", func(t *testing.T) {
		// BatchBytes above the broker's 1 MB limit: the broker refuses.
		s := newSink(t, sinks.KafkaConfig{Conn: conn, Topic: "out", BatchBytes: 4 << 20})
		err := s.Write(testCtx(t, 20*time.Second), []message.Message{{Value: bytes.Repeat([]byte("x"), 1100_000)}})
		if err == nil {
			t.Fatal("1.1 MB message accepted by a broker with a 1 MB limit")
		}
		if !errors.Is(err, message.ErrTooLarge) {
			t.Errorf("error = %.200v, want it marked message.ErrTooLarge (the stream dead-letters instead of retrying)", err)
		}
	})
	t.Run("after close", func(t *testing.T) {
		s := newSink(t, sinks.KafkaConfig{Conn: conn, Topic: "out"})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(testCtx(t, 5*time.Second), []message.Message{{Value: []byte("x")}}); err == nil {
			t.Fatal("write after close succeeded")
		}
	})
	t.Run("unknown topic without auto-create", func(t *testing.T) {
		s := newSink(t, sinks.KafkaConfig{Conn: conn, Topic: "missing"})
		start := time.Now()
		err := s.Write(testCtx(t, 3*time.Second), []message.Message{{Value: []byte("x")}})
		if err == nil {
			t.Fatal("write to a missing topic succeeded")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("write took %v", d)
		}
		if n := len(c.Kfake().PartitionInfos("missing")); n != 0 {
			t.Errorf("topic auto-created with %d partitions", n)
		}
	})
	t.Run("broker down", func(t *testing.T) {
		d, _ := brokertest.Start(t, broker.Options{Topics: map[string]int{"out": 1}})
		s := newSink(t, sinks.KafkaConfig{Conn: kafkaconn.Config{Brokers: d.Addrs()}, Topic: "out"})
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := s.Write(testCtx(t, 3*time.Second), []message.Message{{Value: []byte("x")}}); err == nil {
			t.Fatal("write to a stopped broker succeeded")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("write took %v", d)
		}
	})
}

func TestNewKafkaValidation(t *testing.T) {
	conn := kafkaconn.Config{Brokers: []string{"127.0.0.1:9092"}}
	for _, tc := range []struct {
		name string
		cfg  sinks.KafkaConfig
	}{
		{"no topic", sinks.KafkaConfig{Conn: conn}},
		{"bad compression", sinks.KafkaConfig{Conn: conn, Topic: "t", Compression: "brotli"}},
		{"negative timeout", sinks.KafkaConfig{Conn: conn, Topic: "t", BatchTimeout: -1}},
		{"negative bytes", sinks.KafkaConfig{Conn: conn, Topic: "t", BatchBytes: -1}},
		{"bad conn", sinks.KafkaConfig{Topic: "t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := sinks.NewKafka(tc.cfg, nil); err == nil {
				_ = s.Close()
				t.Fatal("NewKafka succeeded")
			}
		})
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	w := sinks.NewWriter(lockedWriter{&buf, &mu})
	ctx := testCtx(t, 5*time.Second)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				v := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				if err := w.Write(ctx, []message.Message{{Value: []byte(v)}, {Value: []byte(v)}}); err != nil {
					t.Errorf("write: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for i := 0; i < len(lines); i += 2 {
		if lines[i] != lines[i+1] || !strings.HasPrefix(lines[i], `{"g":`) {
			t.Fatalf("lines %d,%d = %q,%q: a batch was interleaved or garbled", i, i+1, lines[i], lines[i+1])
		}
	}
	if err := w.Write(ctx, nil); err != nil {
		t.Errorf("empty write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, []message.Message{{Value: []byte("x")}}); !errors.Is(err, sinks.ErrClosed) {
		t.Errorf("write after close = %v, want ErrClosed", err)
	}
	if err := sinks.NewWriter(failingWriter{}).Write(ctx, []message.Message{{Value: []byte("x")}}); err == nil {
		t.Error("write error swallowed")
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// Connect dials and authenticates: nil with the right credential, an
// error marked message.ErrFatal with a wrong one, and one marked
// message.ErrNotConnected when no broker answers.
func TestKafkaConnect(t *testing.T) {
	c, _ := brokertest.Start(t, broker.Options{SASL: []broker.SASLUser{brokertest.ConnectUser}})
	for _, tc := range brokertest.ConnectCases(t, c.Addrs()) {
		t.Run(tc.Name, func(t *testing.T) {
			s := newSink(t, sinks.KafkaConfig{Conn: tc.Conn, Topic: "t"})
			brokertest.CheckConnect(t, s.Connect(testCtx(t, 20*time.Second)), tc.Want)
		})
	}
}
