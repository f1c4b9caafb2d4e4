package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
)

// Defaults for KafkaConfig.
const (
	DefaultMaxBatch      = 64
	DefaultMaxWait       = 5 * time.Millisecond
	DefaultFetchMaxBytes = 16 << 20
	DefaultFetchMaxWait  = 500 * time.Millisecond
)

// Message is one record read from a source.
type Message = message.Message

// Batch is a group of messages with the function that acknowledges them
// (for Kafka: per partition, the offset after the batch's last message;
// later batches' commits imply earlier ones per partition).
type Batch = message.Batch

var _ message.Source = (*Kafka)(nil)

// KafkaConfig configures a Kafka source.
type KafkaConfig struct {
	Conn    kafkaconn.Config
	Topic   string
	GroupID string
	// MaxBatch is the most messages per ReadBatch (default 64).
	MaxBatch int
	// MaxWait is how long ReadBatch waits to fill a batch after the first
	// message (default 5ms).
	MaxWait time.Duration
	// StartOffset applies when the group has no committed offset for a
	// partition: "earliest" (default) or "latest".
	StartOffset string

	// FetchMaxBytes bounds one fetch response (default 16 MiB); it must
	// exceed the largest message.
	FetchMaxBytes int
	// FetchMaxWait is how long the broker holds a fetch when there is no
	// data (default 500ms); it also bounds how long Close waits for a fetch.
	FetchMaxWait time.Duration
	// Consumer group timings; zero means kafka-go's defaults (3s, 30s,
	// 30s). The broker bounds the session timeout (kfake: at least 6s).
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	RebalanceTimeout  time.Duration
}

// Kafka is a consumer-group source. ReadBatch must not be called
// concurrently with itself; Ack, Lag, MemberID, Restart and Close may be
// called from any goroutine.
type Kafka struct {
	conn     kafkaconn.Config
	rc       kafka.ReaderConfig // template of every reader (Logger set per reader)
	cur      atomic.Pointer[groupReader]
	restarts atomic.Int64
	topic    string
	maxBatch int
	maxWait  time.Duration
	log      *zap.Logger

	mu        sync.Mutex
	committed map[int]int64 // partition -> highest offset committed by this reader
	lag       map[int]int64 // partition -> lag after the last message returned
	// generations counts consumer-group generations seen by Lag.
	generations int64

	lifeMu   sync.Mutex // serializes Restart and Close
	closed   bool
	closeErr error
}

// groupReader is one kafka-go group reader and the member id it last
// joined the group with.
type groupReader struct {
	r      *kafka.Reader
	member atomic.Pointer[string]
}

// joinedFormat is the message kafka-go's consumer group logs after every
// successful join and sync; its second argument is the member id. The
// member id is otherwise not exposed by kafka.Reader (pinned v0.4.51; a
// test fails if this stops matching).
const joinedFormat = "Joined group %s as member %s in generation %d"

// NewKafka creates a Kafka source; it connects lazily (the first ReadBatch
// joins the group).
func NewKafka(cfg KafkaConfig, log *zap.Logger) (*Kafka, error) {
	if log == nil {
		log = zap.NewNop()
	}
	var errs []error
	if cfg.Topic == "" {
		errs = append(errs, errors.New("topic is required"))
	}
	if cfg.GroupID == "" {
		errs = append(errs, errors.New("group id is required"))
	}
	if cfg.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("max batch must be >= 0, got %d", cfg.MaxBatch))
	}
	if cfg.MaxWait < 0 || cfg.FetchMaxWait < 0 || cfg.HeartbeatInterval < 0 || cfg.SessionTimeout < 0 || cfg.RebalanceTimeout < 0 {
		errs = append(errs, errors.New("durations must be >= 0"))
	}
	if cfg.FetchMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("fetch max bytes must be >= 0, got %d", cfg.FetchMaxBytes))
	}
	var start int64
	switch strings.ToLower(cfg.StartOffset) {
	case "", "earliest":
		start = kafka.FirstOffset
	case "latest":
		start = kafka.LastOffset
	default:
		errs = append(errs, fmt.Errorf("start offset %q: want earliest or latest", cfg.StartOffset))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	dialer, err := cfg.Conn.Dialer()
	if err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	k := &Kafka{
		conn:      cfg.Conn,
		topic:     cfg.Topic,
		maxBatch:  orInt(cfg.MaxBatch, DefaultMaxBatch),
		maxWait:   orDur(cfg.MaxWait, DefaultMaxWait),
		log:       log.With(zap.String("topic", cfg.Topic), zap.String("group", cfg.GroupID)),
		committed: make(map[int]int64),
		lag:       make(map[int]int64),
	}
	k.rc = kafka.ReaderConfig{
		Brokers:               cfg.Conn.Brokers,
		GroupID:               cfg.GroupID,
		Topic:                 cfg.Topic,
		Dialer:                dialer,
		QueueCapacity:         2 * k.maxBatch,
		MinBytes:              1,
		MaxBytes:              orInt(cfg.FetchMaxBytes, DefaultFetchMaxBytes),
		MaxWait:               orDur(cfg.FetchMaxWait, DefaultFetchMaxWait),
		CommitInterval:        0, // synchronous commits: Ack returns once committed
		StartOffset:           start,
		HeartbeatInterval:     cfg.HeartbeatInterval,
		SessionTimeout:        cfg.SessionTimeout,
		RebalanceTimeout:      cfg.RebalanceTimeout,
		WatchPartitionChanges: true,
		ReadLagInterval:       -1,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Warn(fmt.Sprintf(msg, args...))
		}),
	}
	if err := k.rc.Validate(); err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	k.cur.Store(k.newReader())
	return k, nil
}

func (k *Kafka) newReader() *groupReader {
	g := &groupReader{}
	rc := k.rc
	rc.Logger = kafka.LoggerFunc(func(msg string, args ...any) {
		if msg == joinedFormat && len(args) == 3 {
			if id, ok := args[1].(string); ok {
				g.member.Store(&id)
			}
		}
		k.log.Debug(fmt.Sprintf(msg, args...))
	})
	g.r = kafka.NewReader(rc)
	return g
}

// MemberID is the consumer-group member id of the current reader's last
// join ("" before the first join).
func (k *Kafka) MemberID() string {
	if id := k.cur.Load().member.Load(); id != nil {
		return *id
	}
	return ""
}

// Restarts is how many times Restart replaced the reader.
func (k *Kafka) Restarts() int64 { return k.restarts.Load() }

// Restart replaces the group reader: the old one leaves the group, a new
// one joins it (which makes the coordinator rebalance the group) and
// resumes every partition it is assigned from the group's committed
// offsets. A ReadBatch blocked on the old reader continues on the new one;
// batches read before the restart are acknowledged through the new reader.
// Uncommitted messages are redelivered (at least once).
func (k *Kafka) Restart() error {
	k.lifeMu.Lock()
	defer k.lifeMu.Unlock()
	if k.closed {
		return fmt.Errorf("kafka source %s: restart: %w", k.topic, io.ErrClosedPipe)
	}
	old := k.cur.Swap(k.newReader())
	k.restarts.Add(1)
	k.mu.Lock()
	clear(k.lag)
	k.generations = 0
	k.mu.Unlock()
	if err := old.r.Close(); err != nil {
		return fmt.Errorf("kafka source %s: restart: close the old reader: %w", k.topic, err)
	}
	return nil
}

// ReadBatch returns the next batch: at least one message, at most MaxBatch.
func (k *Kafka) ReadBatch(ctx context.Context) (Batch, error) {
	g := k.cur.Load()
	first, err := g.r.FetchMessage(ctx)
	for err != nil && ctx.Err() == nil && k.cur.Load() != g {
		// Restart replaced (and closed) the reader: read from the new one.
		g = k.cur.Load()
		first, err = g.r.FetchMessage(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Batch{}, ctx.Err()
		}
		return Batch{}, markRead(fmt.Errorf("kafka source %s: read: %w", k.topic, kafkaconn.Classify(err)))
	}
	raw := make([]kafka.Message, 1, k.maxBatch)
	raw[0] = first
	if k.maxBatch > 1 {
		fill, cancel := context.WithTimeout(ctx, k.maxWait)
		for len(raw) < k.maxBatch {
			m, err := g.r.FetchMessage(fill)
			if err != nil {
				// Timeout, cancellation or a reader error: return what we
				// have; a persistent error shows on the next call.
				break
			}
			raw = append(raw, m)
		}
		cancel()
	}

	last := make(map[int]int64, 4) // partition -> offset after its last message
	msgs := make([]Message, len(raw))
	k.mu.Lock()
	for i, m := range raw {
		msgs[i] = Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset,
			Key: m.Key, Value: m.Value, Headers: headersIn(m.Headers), Time: m.Time}
		last[m.Partition] = m.Offset + 1
		if m.HighWaterMark > 0 {
			k.lag[m.Partition] = max(0, m.HighWaterMark-(m.Offset+1))
		}
	}
	k.mu.Unlock()
	return Batch{Messages: msgs, Ack: func(ctx context.Context) error { return k.ack(ctx, last) }}, nil
}

func (k *Kafka) ack(ctx context.Context, next map[int]int64) error {
	k.mu.Lock()
	commits := make([]kafka.Message, 0, len(next))
	for p, off := range next {
		if c, ok := k.committed[p]; ok && c >= off {
			continue // an equal or later offset is already committed
		}
		// CommitMessages commits Offset+1.
		commits = append(commits, kafka.Message{Topic: k.topic, Partition: p, Offset: off - 1})
	}
	k.mu.Unlock()
	if len(commits) == 0 {
		return nil
	}
	if err := k.cur.Load().r.CommitMessages(ctx, commits...); err != nil {
		return fmt.Errorf("kafka source %s: ack %d partition(s): %w", k.topic, len(commits), kafkaconn.Classify(err))
	}
	k.mu.Lock()
	for _, m := range commits {
		if c, ok := k.committed[m.Partition]; !ok || m.Offset+1 > c {
			k.committed[m.Partition] = m.Offset + 1
		}
	}
	k.mu.Unlock()
	return nil
}

// Lag returns the consumer lag summed over the partitions this reader has
// returned messages from since the last rebalance (best effort).
func (k *Kafka) Lag() int64 {
	r := k.cur.Load().r.Stats().Rebalances // new generations since the last call
	k.mu.Lock()
	defer k.mu.Unlock()
	k.generations += r
	if r > 0 && k.generations > 1 {
		// A rebalance after the first join may have moved partitions
		// away: forget them; owned partitions with lag refill on the
		// next batch.
		clear(k.lag)
	}
	var sum int64
	for _, l := range k.lag {
		sum += l
	}
	return sum
}

// Close leaves the group (without committing anything not acked) and
// releases the connections. It is idempotent; Ack after Close fails.
func (k *Kafka) Close() error {
	k.lifeMu.Lock()
	defer k.lifeMu.Unlock()
	if !k.closed {
		k.closed = true
		if err := k.cur.Load().r.Close(); err != nil {
			k.closeErr = fmt.Errorf("kafka source %s: close: %w", k.topic, err)
		}
	}
	return k.closeErr
}

// Connect implements message.Source: it dials a broker and authenticates
// (kafkaconn.CheckConnection); the reader itself connects on its first
// fetch and redials by itself. A rejected credential or TLS handshake is
// marked message.ErrFatal, anything else message.ErrNotConnected.
func (k *Kafka) Connect(ctx context.Context) error {
	if err := kafkaconn.CheckConnection(ctx, k.conn); err != nil {
		return markRead(fmt.Errorf("kafka source %s: connect: %w", k.topic, err))
	}
	return nil
}

// markRead marks a read error for the runtime: a rejected credential or
// TLS handshake is fatal, anything else a lost connection to retry.
func markRead(err error) error {
	if errors.Is(err, kafkaconn.ErrAuth) || errors.Is(err, kafkaconn.ErrTLS) {
		return message.Mark(err, message.ErrFatal)
	}
	return message.Mark(err, message.ErrNotConnected)
}

// headersIn converts kafka-go headers to message headers.
func headersIn(hs []kafka.Header) []message.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]message.Header, len(hs))
	for i, h := range hs {
		out[i] = message.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}
