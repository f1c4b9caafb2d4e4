package kafkaledger

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
	"github.com/dpsurv/dpsurv/ledger"
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

func newKafkaLog(ctx context.Context, conn kafkaconn.Config, topic string, log *zap.Logger, ledgerTopic bool) (*kafkaLog, error) {
	if topic == "" {
		return nil, errors.New("empty topic")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if ledgerTopic {
		// One partition, never compacted, kept forever (ensureLedgerTopic).
		if err := ensureLedgerTopic(ctx, conn, topic); err != nil {
			return nil, err
		}
	} else if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{topic: 1}, map[string]bool{topic: true}); err != nil {
		// One partition: the log has a total order. Compacted: old
		// versions of a key may go, distinct keys stay.
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
	_, err := k.readFrom(ctx, -1, fn)
	return err
}

// readFrom calls fn for every message of partition 0 from offset from (-1:
// the first offset) to the end as of the call, and returns that end.
func (k *kafkaLog) readFrom(ctx context.Context, from int64, fn func(kafka.Message) error) (int64, error) {
	c, err := k.dialer.DialLeader(ctx, "tcp", k.conn.Brokers[0], k.topic, 0)
	if err != nil {
		return 0, fmt.Errorf("read %s: dial leader: %w", k.topic, kafkaconn.Classify(err))
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	first, last, err := c.ReadOffsets()
	if !stop() && err == nil {
		err = ctx.Err() // c is closed
	}
	if err != nil {
		c.Close()
		return 0, fmt.Errorf("read %s: offsets: %w", k.topic, kafkaconn.Classify(err))
	}
	if from > first {
		first = from
	}
	if last <= first {
		c.Close()
		return max(last, from), nil
	}
	return last, k.read(ctx, c, first, last, fn)
}

// readFetchWait bounds how long the broker holds one fetch of read for
// data; read only asks for offsets below the end it was given, so a fetch
// waits only for data that is late to become readable.
const readFetchWait = time.Second

// read calls fn for the messages of partition 0 in [first, last), fetched
// on c, the partition leader's connection, which it closes. It never
// fetches past last, so it does not wait out a fetch for messages that are
// not there (a partition reader prefetches, and its Close waits for that
// fetch: about 150 ms per read). A failed fetch is retried on a new
// connection from the next offset, with backoff, until ctx ends; an error
// of fn ends the read.
func (k *kafkaLog) read(ctx context.Context, c *kafka.Conn, first, last int64, fn func(kafka.Message) error) error {
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	next, failures := first, 0
	for next < last {
		if c == nil {
			var err error
			if c, err = k.dialer.DialLeader(ctx, "tcp", k.conn.Brokers[0], k.topic, 0); err != nil {
				c = nil
				if err := k.readFailed(ctx, &failures, fmt.Errorf("dial leader: %w", err)); err != nil {
					return err
				}
				continue
			}
		}
		got, fnErr, err := k.fetch(ctx, c, next, last, fn)
		if fnErr != nil {
			return fnErr
		}
		if got > next {
			next, failures = got, 0
		} else if err == nil {
			// A fetch that returned nothing below last (the broker held it
			// for readFetchWait): retried with backoff, not at once.
			err = fmt.Errorf("fetch at offset %d returned no message below the end %d", next, last)
		}
		if err != nil {
			c.Close()
			c = nil
			if err := k.readFailed(ctx, &failures, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// fetch reads one batch at offset next on c, calling fn for its messages
// below last; it returns the offset after the last message handed to fn,
// fn's error, and the fetch's.
func (k *kafkaLog) fetch(ctx context.Context, c *kafka.Conn, next, last int64, fn func(kafka.Message) error) (int64, error, error) {
	if _, err := c.Seek(next, kafka.SeekAbsolute); err != nil {
		return next, nil, err
	}
	// a cancelled ctx (the service stopping) ends a fetch the broker does
	// not answer: c is closed, and read's retry returns ctx's error
	defer context.AfterFunc(ctx, func() { c.Close() })()
	deadline := time.Now().Add(readFetchWait + 10*time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.SetReadDeadline(deadline); err != nil {
		return next, nil, err
	}
	batch := c.ReadBatchWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: 16 << 20, MaxWait: readFetchWait})
	for next < last {
		m, err := batch.ReadMessage()
		if err != nil {
			break // the batch's end (its Close reports a real error)
		}
		if m.Offset < next {
			continue
		}
		if m.Offset >= last {
			// the offsets from next to last hold no message (compacted
			// away, or control records): the range is read
			next = last
			break
		}
		if err := fn(m); err != nil {
			batch.Close()
			return next, err, nil
		}
		next = m.Offset + 1
	}
	if err := batch.Close(); err != nil {
		return next, nil, err
	}
	// A batch whose last records were compacted away ends before its
	// last offset; the batch's offset then stands past them.
	if o := batch.Offset(); o > next {
		next = min(o, last)
	}
	if err := ctx.Err(); err != nil {
		return next, nil, err
	}
	return next, nil, nil
}

// readFailed logs a failed fetch and waits before the next attempt, or
// returns the error when ctx has ended.
func (k *kafkaLog) readFailed(ctx context.Context, failures *int, err error) error {
	*failures++
	if ctx.Err() != nil {
		return fmt.Errorf("read %s: %w", k.topic, kafkaconn.Classify(err))
	}
	k.log.Warn("ledger topic read failed; retrying", zap.Error(err), zap.Int("attempt", *failures))
	t := time.NewTimer(min(time.Duration(*failures)*100*time.Millisecond, 2*time.Second))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("read %s: %w", k.topic, kafkaconn.Classify(err))
	case <-t.C:
		return nil
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

// Backend is the service-mode Backend: a single-partition topic that is never
// compacted and keeps its records forever (cleanup.policy=delete,
// retention.ms=-1, retention.bytes=-1; an existing topic with another
// policy is refused), one record per entry (chunked if large), written with
// acks from all in-sync replicas before Append returns. Open reads the
// topic from its start to its end; Tail reads on from there.
//
// Why not compacted: a write reported as failed can still land later (a
// lost acknowledgement, a request still in flight, a former lease holder),
// so one window key can appear twice with different values. The ledger
// counts the first complete entry of a key in offset order, and publishes
// only that (it reads the topic back after every append, Tailer); a
// compacted topic keeps the LAST record per key, and could replace the
// counted release by another. Each chunk's Kafka key also carries a hash of
// the entry, so chunks of two different values never mix.
type Backend struct {
	l    *kafkaLog
	mu   sync.Mutex
	next int64 // first offset not yet read (-1 before the first Load)
	asm  assembler
}

// Open ensures the topic (1 partition, cleanup.policy=delete,
// unlimited retention) and returns the backend.
func Open(ctx context.Context, conn kafkaconn.Config, topic string, log *zap.Logger) (*Backend, error) {
	l, err := newKafkaLog(ctx, conn, topic, log, true)
	if err != nil {
		return nil, fmt.Errorf("open kafka ledger: %w", err)
	}
	return &Backend{l: l, next: -1}, nil
}

// ensureLedgerTopic creates the ledger topic (one partition, delete policy,
// unlimited retention by time and size) or checks an existing one: a
// compacted ledger could replace a counted release by a later record of its
// key, and a ledger whose records expire would refill the budget on the
// next start. Either is refused, naming the setting to change.
func ensureLedgerTopic(ctx context.Context, conn kafkaconn.Config, topic string) error {
	t, err := conn.Transport()
	if err != nil {
		return err
	}
	defer t.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(conn.Brokers...), Transport: t, Timeout: 10 * time.Second}
	want := map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: 1, ReplicationFactor: -1}
	for _, k := range []string{"cleanup.policy", "retention.ms", "retention.bytes"} {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: want[k]})
	}
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err != nil {
		return fmt.Errorf("ensure ledger topic %q: create: %w", topic, kafkaconn.Classify(err))
	}
	if e := resp.Errors[topic]; e != nil && !errors.Is(e, kafka.TopicAlreadyExists) {
		return fmt.Errorf("ensure ledger topic %q: create: %w", topic, kafkaconn.Classify(e))
	}
	dr, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"cleanup.policy", "retention.ms"}}}})
	if err != nil {
		return fmt.Errorf("ensure ledger topic %q: describe configs: %w", topic, kafkaconn.Classify(err))
	}
	for _, r := range dr.Resources {
		if r.Error != nil {
			return fmt.Errorf("ensure ledger topic %q: describe configs: %w", topic, kafkaconn.Classify(r.Error))
		}
		for _, c := range r.ConfigEntries {
			switch {
			case c.ConfigName == "cleanup.policy" && strings.Contains(c.ConfigValue, "compact"):
				return fmt.Errorf("ledger topic %q has cleanup.policy=%s: a compacted ledger keeps the last record of a key, which can differ from the release that was counted and published; set cleanup.policy=delete and retention.ms=-1 on it", topic, c.ConfigValue)
			case c.ConfigName == "retention.ms" && c.ConfigValue != "-1":
				return fmt.Errorf("ledger topic %q has retention.ms=%s: expired entries would refill the privacy budget on the next start; set retention.ms=-1 (and retention.bytes=-1) on it", topic, c.ConfigValue)
			}
		}
	}
	return nil
}

// entryKey is the Kafka key prefix of an entry's chunks: its key and a hash
// of the encoded entry, so that two different values of one key never
// share a chunk key (their chunks cannot mix, and no broker-side cleanup
// can merge them).
func entryKey(key string, v []byte) string {
	sum := sha256.Sum256(v)
	return key + "@" + hex.EncodeToString(sum[:8])
}

// Load implements Backend: every complete entry from the topic's start.
func (b *Backend) Load(ctx context.Context) ([]ledger.Entry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next, b.asm = -1, assembler{}
	out, err := b.readLocked(ctx)
	if err != nil {
		return nil, fmt.Errorf("load kafka ledger: %w", err)
	}
	return out, nil
}

// Tail implements Tailer: the entries completed since the last Load or
// Tail, in offset order.
func (b *Backend) Tail(ctx context.Context) ([]ledger.Entry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next < 0 {
		return nil, errors.New("tail kafka ledger: not loaded")
	}
	out, err := b.readLocked(ctx)
	if err != nil {
		return nil, fmt.Errorf("tail kafka ledger: %w", err)
	}
	return out, nil
}

func (b *Backend) readLocked(ctx context.Context) ([]ledger.Entry, error) {
	var out []ledger.Entry
	end, err := b.l.readFrom(ctx, b.next, func(m kafka.Message) error {
		_, v, done, err := b.asm.add(m)
		if err != nil {
			return fmt.Errorf("ledger topic offset %d: %w", m.Offset, err)
		}
		if !done {
			return nil
		}
		var e ledger.Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("ledger topic offset %d: %w", m.Offset, err)
		}
		if err := e.Validate(); err != nil {
			return fmt.Errorf("ledger topic offset %d: %w", m.Offset, err)
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		// The cursor and the partial chunks are no longer known to be
		// consistent: the next Tail must start again from a Load.
		b.next = -1
		return nil, err
	}
	b.next = end
	return out, nil
}

// Append implements Backend.
func (b *Backend) Append(ctx context.Context, e ledger.Entry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("append ledger entry: %w", err)
	}
	if err := b.l.write(ctx, chunks(entryKey(e.Key, v), v)); err != nil {
		return fmt.Errorf("append ledger entry: %w", err)
	}
	return nil
}

// Close implements Backend.
func (b *Backend) Close() error {
	if err := b.l.close(); err != nil {
		return fmt.Errorf("close kafka ledger: %w", err)
	}
	return nil
}

// State is the service-mode StateStore on a compacted topic. Each Save
// writes the snapshot's chunks into one of two slots (alternating), then a
// head record naming the slot, sequence number and SHA-256; Load trusts only
// a head whose chunks are complete and match the hash. A crash during Save
// leaves the previous head and its slot intact.
type State struct {
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

// OpenState ensures the topic and returns the store.
func OpenState(ctx context.Context, conn kafkaconn.Config, topic string, log *zap.Logger) (*State, error) {
	l, err := newKafkaLog(ctx, conn, topic, log, false)
	if err != nil {
		return nil, fmt.Errorf("open kafka state: %w", err)
	}
	return &State{l: l}, nil
}

// Load implements StateStore.
func (s *State) Load(ctx context.Context) ([]byte, error) {
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
func (s *State) Save(ctx context.Context, data []byte) error {
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
func (s *State) Close() error {
	if err := s.l.close(); err != nil {
		return fmt.Errorf("close kafka state: %w", err)
	}
	return nil
}
