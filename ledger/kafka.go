package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
)

// ChunkBytes is the largest value of one message the Kafka backends write;
// larger records are split into consecutive chunks (the broker's default
// message size limit is about 1 MB).
const ChunkBytes = 256 << 10

// Header keys of chunked records.
const (
	headerChunk = "dpsurv-chunk" // "i/n"
	headerSeq   = "dpsurv-seq"   // snapshot sequence number (state store)
)

// kafkaLog is a single-partition compacted topic with one writer (this
// process) and a reader that reads it from the start to its end.
type kafkaLog struct {
	conn   kafkaconn.Config
	topic  string
	dialer *kafka.Dialer
	w      *kafka.Writer
	t      *kafka.Transport
	log    *zap.Logger
	once   sync.Once
}

func newKafkaLog(ctx context.Context, conn kafkaconn.Config, topic string, log *zap.Logger) (*kafkaLog, error) {
	if topic == "" {
		return nil, errors.New("empty topic")
	}
	if log == nil {
		log = zap.NewNop()
	}
	// One partition: the log has a total order. Compacted: old versions
	// of a key may go, distinct keys stay.
	if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{topic: 1}, map[string]bool{topic: true}); err != nil {
		return nil, err
	}
	d, err := conn.Dialer()
	if err != nil {
		return nil, err
	}
	t, err := conn.Transport()
	if err != nil {
		return nil, err
	}
	k := &kafkaLog{conn: conn, topic: topic, dialer: d, t: t, log: log.With(zap.String("topic", topic))}
	k.w = &kafka.Writer{
		Addr:         kafka.TCP(conn.Brokers...),
		Topic:        topic,
		Balancer:     partitionZero{},
		MaxAttempts:  5,
		BatchSize:    1_000,
		BatchBytes:   4 * ChunkBytes,
		BatchTimeout: time.Millisecond,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		RequiredAcks: kafka.RequireAll,
		Transport:    t,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Warn(fmt.Sprintf(msg, args...))
		}),
	}
	return k, nil
}

type partitionZero struct{}

func (partitionZero) Balance(_ kafka.Message, partitions ...int) int {
	for _, p := range partitions {
		if p == 0 {
			return 0
		}
	}
	return partitions[0]
}

// write sends msgs in order and returns once all are acknowledged by every
// in-sync replica.
func (k *kafkaLog) write(ctx context.Context, msgs []kafka.Message) error {
	if err := k.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("write %s: %w", k.topic, kafkaconn.Classify(err))
	}
	return nil
}

// readAll calls fn for every message of partition 0 from the first offset
// to the end as of the call.
func (k *kafkaLog) readAll(ctx context.Context, fn func(kafka.Message) error) error {
	c, err := k.dialer.DialLeader(ctx, "tcp", k.conn.Brokers[0], k.topic, 0)
	if err != nil {
		return fmt.Errorf("read %s: dial leader: %w", k.topic, kafkaconn.Classify(err))
	}
	first, last, err := c.ReadOffsets()
	c.Close()
	if err != nil {
		return fmt.Errorf("read %s: offsets: %w", k.topic, kafkaconn.Classify(err))
	}
	if last <= first {
		return nil
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   k.conn.Brokers,
		Topic:     k.topic,
		Partition: 0,
		Dialer:    k.dialer,
		MinBytes:  1,
		MaxBytes:  16 << 20,
		MaxWait:   200 * time.Millisecond,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Warn(fmt.Sprintf(msg, args...))
		}),
	})
	defer r.Close()
	if err := r.SetOffset(first); err != nil {
		return fmt.Errorf("read %s: %w", k.topic, err)
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("read %s: %w", k.topic, kafkaconn.Classify(err))
		}
		if err := fn(m); err != nil {
			return err
		}
		if m.Offset+1 >= last {
			return nil
		}
	}
}

func (k *kafkaLog) close() error {
	var err error
	k.once.Do(func() {
		err = k.w.Close()
		k.t.CloseIdleConnections()
	})
	return err
}

// chunks splits value into messages keyed key#i carrying "i/n" headers.
func chunks(key string, value []byte, extra ...kafka.Header) []kafka.Message {
	n := max(1, (len(value)+ChunkBytes-1)/ChunkBytes)
	out := make([]kafka.Message, n)
	for i := range n {
		part := value[min(i*ChunkBytes, len(value)):min((i+1)*ChunkBytes, len(value))]
		h := append([]kafka.Header{{Key: headerChunk, Value: []byte(strconv.Itoa(i) + "/" + strconv.Itoa(n))}}, extra...)
		out[i] = kafka.Message{Key: []byte(key + "#" + strconv.Itoa(i)), Value: part, Headers: h}
	}
	return out
}

func header(m kafka.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// parseChunk returns the logical key and the chunk's position.
func parseChunk(m kafka.Message) (key string, i, n int, err error) {
	h, ok := header(m, headerChunk)
	if !ok {
		return "", 0, 0, errors.New("message without chunk header")
	}
	a, b, ok := strings.Cut(h, "/")
	if !ok {
		return "", 0, 0, fmt.Errorf("malformed chunk header %q", h)
	}
	if i, err = strconv.Atoi(a); err != nil {
		return "", 0, 0, fmt.Errorf("malformed chunk header %q", h)
	}
	if n, err = strconv.Atoi(b); err != nil || n < 1 || i < 0 || i >= n {
		return "", 0, 0, fmt.Errorf("malformed chunk header %q", h)
	}
	k := string(m.Key)
	cut := strings.LastIndexByte(k, '#')
	if cut < 0 {
		return "", 0, 0, errors.New("chunk key without index")
	}
	return k[:cut], i, n, nil
}

// assembler joins the chunks of each record (in any order; a retried
// write may repeat them). The chunks of a write that died midway never
// complete and are ignored.
type assembler struct {
	pending map[string]*partial
}

type partial struct {
	n     int
	parts map[int][]byte
}

// add returns a complete record when m completes one.
func (a *assembler) add(m kafka.Message) (key string, value []byte, done bool, err error) {
	k, i, n, err := parseChunk(m)
	if err != nil {
		return "", nil, false, err
	}
	if a.pending == nil {
		a.pending = map[string]*partial{}
	}
	p := a.pending[k]
	if p == nil || p.n != n {
		p = &partial{n: n, parts: map[int][]byte{}}
		a.pending[k] = p
	}
	p.parts[i] = bytes.Clone(m.Value)
	if len(p.parts) < n {
		return "", nil, false, nil
	}
	delete(a.pending, k)
	var buf bytes.Buffer
	for j := range n {
		buf.Write(p.parts[j])
	}
	return k, buf.Bytes(), true, nil
}

// Kafka is the service-mode Backend: a compacted single-partition topic,
// one record per entry keyed by the entry key (chunked if large), written
// with acks from all in-sync replicas before Append returns. Open reads the
// topic from its start to its end. Only one process may write a ledger
// topic: the aggregators must run in a single replica.
type Kafka struct {
	l *kafkaLog
}

// OpenKafka ensures the topic (1 partition, cleanup.policy=compact) and
// returns the backend.
func OpenKafka(ctx context.Context, conn kafkaconn.Config, topic string, log *zap.Logger) (*Kafka, error) {
	l, err := newKafkaLog(ctx, conn, topic, log)
	if err != nil {
		return nil, fmt.Errorf("open kafka ledger: %w", err)
	}
	return &Kafka{l: l}, nil
}

// Load implements Backend.
func (b *Kafka) Load(ctx context.Context) ([]Entry, error) {
	var (
		out []Entry
		asm assembler
	)
	err := b.l.readAll(ctx, func(m kafka.Message) error {
		_, v, done, err := asm.add(m)
		if err != nil {
			return fmt.Errorf("ledger topic offset %d: %w", m.Offset, err)
		}
		if !done {
			return nil
		}
		var e Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("ledger topic offset %d: %w", m.Offset, err)
		}
		if err := e.validate(); err != nil {
			return fmt.Errorf("ledger topic offset %d: %w", m.Offset, err)
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load kafka ledger: %w", err)
	}
	return out, nil
}

// Append implements Backend.
func (b *Kafka) Append(ctx context.Context, e Entry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("append ledger entry: %w", err)
	}
	if err := b.l.write(ctx, chunks(e.Key, v)); err != nil {
		return fmt.Errorf("append ledger entry: %w", err)
	}
	return nil
}

// Close implements Backend.
func (b *Kafka) Close() error {
	if err := b.l.close(); err != nil {
		return fmt.Errorf("close kafka ledger: %w", err)
	}
	return nil
}

// KafkaState is the service-mode StateStore on a compacted topic. Each Save
// writes the snapshot's chunks into one of two slots (alternating), then a
// head record naming the slot, sequence number and SHA-256; Load trusts only
// a head whose chunks are complete and match the hash. A crash during Save
// leaves the previous head and its slot intact.
type KafkaState struct {
	l   *kafkaLog
	seq uint64
}

const stateHead = "snapshot/head"

type stateHeadValue struct {
	Seq    uint64 `json:"seq"`
	Slot   int    `json:"slot"`
	Chunks int    `json:"chunks"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// OpenKafkaState ensures the topic and returns the store.
func OpenKafkaState(ctx context.Context, conn kafkaconn.Config, topic string, log *zap.Logger) (*KafkaState, error) {
	l, err := newKafkaLog(ctx, conn, topic, log)
	if err != nil {
		return nil, fmt.Errorf("open kafka state: %w", err)
	}
	return &KafkaState{l: l}, nil
}

// Load implements StateStore.
func (s *KafkaState) Load(ctx context.Context) ([]byte, error) {
	var (
		head    *stateHeadValue
		slots   [2]map[int][]byte // chunk index -> value, of the latest seq seen per slot
		slotSeq [2]uint64
	)
	err := s.l.readAll(ctx, func(m kafka.Message) error {
		if string(m.Key) == stateHead {
			var h stateHeadValue
			if err := json.Unmarshal(m.Value, &h); err != nil || h.Slot < 0 || h.Slot > 1 {
				return fmt.Errorf("state topic offset %d: malformed head", m.Offset)
			}
			head = &h
			return nil
		}
		k, i, n, err := parseChunk(m)
		if err != nil {
			return fmt.Errorf("state topic offset %d: %w", m.Offset, err)
		}
		seqStr, _ := header(m, headerSeq)
		seq, err := strconv.ParseUint(seqStr, 10, 64)
		if err != nil {
			return fmt.Errorf("state topic offset %d: malformed sequence", m.Offset)
		}
		slot := 0
		if k == "snapshot/1" {
			slot = 1
		}
		if slots[slot] == nil || seq != slotSeq[slot] {
			slots[slot], slotSeq[slot] = map[int][]byte{}, seq
		}
		_ = n
		slots[slot][i] = bytes.Clone(m.Value)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load kafka state: %w", err)
	}
	if head == nil {
		return nil, nil
	}
	s.seq = head.Seq
	if slotSeq[head.Slot] != head.Seq {
		return nil, fmt.Errorf("load kafka state: snapshot %d: chunks missing", head.Seq)
	}
	var buf bytes.Buffer
	for i := range head.Chunks {
		c, ok := slots[head.Slot][i]
		if !ok {
			return nil, fmt.Errorf("load kafka state: snapshot %d: chunk %d missing", head.Seq, i)
		}
		buf.Write(c)
	}
	sum := sha256.Sum256(buf.Bytes())
	if hex.EncodeToString(sum[:]) != head.SHA256 || buf.Len() != head.Bytes {
		return nil, fmt.Errorf("load kafka state: snapshot %d: checksum mismatch", head.Seq)
	}
	return buf.Bytes(), nil
}

// Save implements StateStore.
func (s *KafkaState) Save(ctx context.Context, data []byte) error {
	seq := s.seq + 1
	slot := int(seq % 2)
	seqH := kafka.Header{Key: headerSeq, Value: []byte(strconv.FormatUint(seq, 10))}
	if err := s.l.write(ctx, chunks("snapshot/"+strconv.Itoa(slot), data, seqH)); err != nil {
		return fmt.Errorf("save kafka state: %w", err)
	}
	sum := sha256.Sum256(data)
	n := max(1, (len(data)+ChunkBytes-1)/ChunkBytes)
	h, _ := json.Marshal(stateHeadValue{Seq: seq, Slot: slot, Chunks: n, SHA256: hex.EncodeToString(sum[:]), Bytes: len(data)})
	if err := s.l.write(ctx, []kafka.Message{{Key: []byte(stateHead), Value: h}}); err != nil {
		return fmt.Errorf("save kafka state: head: %w", err)
	}
	s.seq = seq
	return nil
}

// Close implements StateStore.
func (s *KafkaState) Close() error {
	if err := s.l.close(); err != nil {
		return fmt.Errorf("close kafka state: %w", err)
	}
	return nil
}
