package kafkaledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
)

// A crash in the middle of a write leaves chunks without their end (or a
// snapshot without its head): loading ignores them and keeps what was
// complete, and the budget is not touched by the torn entry.
func TestKafkaTornWrites(t *testing.T) {
	ctx, _, conn := kafkaTest(t, "torn")

	t.Run("ledger entry", func(t *testing.T) {
		b, l := openLedger(t, ctx, conn, "torn.ledger", map[string]float64{"stream": 1})
		if _, _, err := l.Release(ctx, "a", []string{"stream"}, 0.5, func(map[string]float64) ([]byte, error) { return []byte(`{"a":1}`), nil }); err != nil {
			t.Fatal(err)
		}
		// The first of two chunks of entry "b", then the process "dies".
		torn := chunks("b", bytes.Repeat([]byte("x"), ChunkBytes+10))
		if err := b.l.write(ctx, torn[:1]); err != nil {
			t.Fatal(err)
		}
		l.Close()
		_, l2 := openLedger(t, ctx, conn, "torn.ledger", map[string]float64{"stream": 1})
		defer l2.Close()
		if l2.Len() != 1 || l2.Spent("stream") != 0.5 {
			t.Fatalf("after torn entry: %d entries, spent %v", l2.Len(), l2.Spent("stream"))
		}
	})

	t.Run("snapshot", func(t *testing.T) {
		s, err := OpenState(ctx, conn, "torn.state", nil)
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
		s2, err := OpenState(ctx, conn, "torn.state", nil)
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

// On Kafka: a value of a window written by someone else (a late append, a
// former lease holder) after this ledger loaded but before its own append
// is found by the read-back, and that earlier value is what Release returns
// for publication — and what a fresh ledger counts; both values are
// charged. Chunks of two values of one key never mix (their Kafka keys
// carry the entry's hash), and the topic is created uncompacted with
// unlimited retention: a compacted or expiring ledger topic is refused.
func TestKafkaLedgerLateWriteAndTopicPolicy(t *testing.T) {
	ctx, cl, conn := kafkaTest(t, "late")

	b, l := openLedger(t, ctx, conn, "late.ledger", map[string]float64{"stream": 10})
	defer l.Close()
	// A large value, in two chunks, lands while this ledger draws its own
	// (after its read-before-write, before its append).
	early := ledger.Entry{Key: "km/1/A", Scopes: []string{"stream"}, Epsilon: 1,
		Release: []byte(`{"noise":"` + strings.Repeat("e", ChunkBytes) + `"}`)}
	v, _ := json.Marshal(early)
	got, replay, err := l.Release(ctx, "km/1/A", []string{"stream"}, 1, func(map[string]float64) ([]byte, error) {
		if err := b.l.write(ctx, chunks(entryKey(early.Key, v), v)); err != nil {
			return nil, err
		}
		return []byte(`{"noise":"` + strings.Repeat("l", ChunkBytes) + `"}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, early.Release) || !replay {
		t.Fatalf("release published %.20s... (replay %v), want the earlier value", got, replay)
	}
	if s := l.Spent("stream"); s != 2 {
		t.Fatalf("spent %v, want 2 (both stored values charged)", s)
	}
	_, l2 := openLedger(t, ctx, conn, "late.ledger", nil)
	defer l2.Close()
	if st, _ := l2.Lookup("km/1/A"); !bytes.Equal(st, early.Release) || l2.Spent("stream") != 2 {
		t.Fatalf("fresh ledger counts %.20s..., spent %v", st, l2.Spent("stream"))
	}
	// A value written by another writer before this ledger's next release
	// of that key is found by the read before the write: replayed, nothing
	// drawn, nothing charged.
	other := ledger.Entry{Key: "km/2/A", Scopes: []string{"stream"}, Epsilon: 1, Release: []byte(`{"noise":"other"}`)}
	ov, _ := json.Marshal(other)
	if err := b.l.write(ctx, chunks(entryKey(other.Key, ov), ov)); err != nil {
		t.Fatal(err)
	}
	got, replay, err = l.Release(ctx, "km/2/A", []string{"stream"}, 1, func(map[string]float64) ([]byte, error) {
		t.Fatal("drew a value for a key another writer had released")
		return nil, nil
	})
	if err != nil || !replay || string(got) != string(other.Release) {
		t.Fatalf("release of km/2/A: %s, replay %v, %v", got, replay, err)
	}
	if s := l.Spent("stream"); s != 3 {
		t.Fatalf("spent %v, want 3", s)
	}
	if info := cl.Kfake().TopicInfo("late.ledger"); info == nil {
		t.Fatal("no topic info")
	} else {
		for k, want := range map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"} {
			if v := info.Configs[k]; v == nil || *v != want {
				t.Fatalf("ledger topic %s = %v, want %s", k, v, want)
			}
		}
	}
	for name, cfg := range map[string]map[string]string{
		"compacted": {"cleanup.policy": "compact"},
		"expiring":  {"cleanup.policy": "delete", "retention.ms": "604800000"},
	} {
		topic := "refused." + name
		if err := cl.Kfake().CreateTopic(topic, 1, cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, conn, topic, nil); err == nil || !strings.Contains(err.Error(), topic) {
			t.Fatalf("%s ledger topic accepted (%v)", name, err)
		}
	}
}

// openLedger opens the Kafka ledger backend on topic and a ledger over it
// with the budget, failing the test on an error.
// kafkaTest is a test's context (20 s) and a one-partition broker, with
// the client id clientID.
func kafkaTest(t *testing.T, clientID string) (context.Context, *broker.Cluster, kafkaconn.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	cl, conn := brokertest.Start(t, broker.Options{Partitions: 1})
	conn.ClientID = clientID
	return ctx, cl, conn
}

func openLedger(t *testing.T, ctx context.Context, conn kafkaconn.Config, topic string, budget map[string]float64) (*Backend, *ledger.Ledger) {
	t.Helper()
	b, err := Open(ctx, conn, topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, b, ledger.Options{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return b, l
}

// A fetch of the ledger topic that fails (the broker drops the connection)
// is retried on a new connection after a pause: the ledger opened
// meanwhile counts every entry once.
func TestKafkaReadRetriesFailedFetch(t *testing.T) {
	ctx, cl, conn := kafkaTest(t, "refetch")
	_, l := openLedger(t, ctx, conn, "refetch.ledger", map[string]float64{"stream": 10})
	for _, key := range []string{"a", "b", "c"} {
		big := []byte(`{"noise":"` + strings.Repeat(key, ChunkBytes) + `"}`) // two chunks
		if _, _, err := l.Release(ctx, key, []string{"stream"}, 1, func(map[string]float64) ([]byte, error) { return big, nil }); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()

	var fetches, dropped atomic.Int32
	kf := cl.Kfake()
	kf.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if fetches.Add(1) == 1 {
			dropped.Add(1)
			return nil, errors.New("connection dropped"), true
		}
		return nil, nil, false
	})
	_, l2 := openLedger(t, ctx, conn, "refetch.ledger", nil)
	defer l2.Close()
	if dropped.Load() != 1 {
		t.Fatalf("%d fetches dropped, want 1 (the test checks nothing)", dropped.Load())
	}
	if l2.Len() != 3 || l2.Spent("stream") != 3 {
		t.Fatalf("after dropped fetches: %d entries, spent %v; want 3 and 3", l2.Len(), l2.Spent("stream"))
	}
	for _, key := range []string{"a", "b", "c"} {
		if v, ok := l2.Lookup(key); !ok || !strings.Contains(string(v), strings.Repeat(key, 10)) {
			t.Errorf("entry %s: %.30s (%v)", key, v, ok)
		}
	}
}
