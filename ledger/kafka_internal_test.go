package ledger

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/kafkaconn"
)

// A crash in the middle of a write leaves chunks without their end (or a
// snapshot without its head): loading ignores them and keeps what was
// complete, and the budget is not touched by the torn entry.
func TestKafkaTornWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := broker.StartForTest(t, broker.Options{Partitions: 1})
	conn := kafkaconn.Config{Brokers: cl.Addrs(), ClientID: "torn"}

	t.Run("ledger entry", func(t *testing.T) {
		b, err := OpenKafka(ctx, conn, "torn.ledger", nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Open(ctx, b, Options{Budget: map[string]float64{"stream": 1}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Release(ctx, "a", []string{"stream"}, 0.5, func(map[string]float64) ([]byte, error) { return []byte(`{"a":1}`), nil }); err != nil {
			t.Fatal(err)
		}
		// The first of two chunks of entry "b", then the process "dies".
		torn := chunks("b", bytes.Repeat([]byte("x"), ChunkBytes+10))
		if err := b.l.write(ctx, torn[:1]); err != nil {
			t.Fatal(err)
		}
		l.Close()
		b2, err := OpenKafka(ctx, conn, "torn.ledger", nil)
		if err != nil {
			t.Fatal(err)
		}
		l2, err := Open(ctx, b2, Options{Budget: map[string]float64{"stream": 1}})
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		if l2.Len() != 1 || l2.Spent("stream") != 0.5 {
			t.Fatalf("after torn entry: %d entries, spent %v", l2.Len(), l2.Spent("stream"))
		}
	})

	t.Run("snapshot", func(t *testing.T) {
		s, err := OpenKafkaState(ctx, conn, "torn.state", nil)
		if err != nil {
			t.Fatal(err)
		}
		good := bytes.Repeat([]byte("good"), ChunkBytes/2) // 2 chunks
		if err := s.Save(ctx, good); err != nil {
			t.Fatal(err)
		}
		// Next save writes its chunks into the other slot but dies before
		// the head.
		seq := kafka.Header{Key: headerSeq, Value: []byte(strconv.FormatUint(s.seq+1, 10))}
		if err := s.l.write(ctx, chunks("snapshot/"+strconv.Itoa(int((s.seq+1)%2)), []byte("partial"), seq)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s2, err := OpenKafkaState(ctx, conn, "torn.state", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		got, err := s2.Load(ctx)
		if err != nil || !bytes.Equal(got, good) {
			t.Fatalf("load after torn save: %d bytes, %v", len(got), err)
		}
		// And the store keeps working: the retried save overwrites the slot.
		if err := s2.Save(ctx, []byte("next")); err != nil {
			t.Fatal(err)
		}
		got, err = s2.Load(ctx)
		if err != nil || string(got) != "next" {
			t.Fatalf("load after retried save: %q %v", got, err)
		}
	})
}
