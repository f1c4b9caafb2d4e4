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
	// IsolationLevel is "read_committed" (default) or "read_uncommitted".
	// With read_committed the source reads up to the last stable offset,
	// never returns a record of an aborted transaction, and commits past
	// them; control records (transaction markers) are never returned.
	IsolationLevel string
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
	conn       kafkaconn.Config
	dialer     *kafka.Dialer
	topic      string
	group      string
	start      int64 // kafka.FirstOffset or kafka.LastOffset
	isolation  kafka.IsolationLevel
	fetchWait  time.Duration
	fetchBytes int
	timing     struct{ heartbeat, session, rebalance time.Duration }
	maxBatch   int
	maxWait    time.Duration
	log        *zap.Logger

	cur      atomic.Pointer[groupReader]
	restarts atomic.Int64
	versions atomic.Int64 // generations joined, over every reader
	aborted  atomic.Int64 // aborted transactional records skipped
	control  atomic.Int64 // control records (transaction markers) skipped

	// pend is the chunk ReadBatch is taking messages from (ReadBatch only).
	pend    chunk
	pendIdx int

	mu        sync.Mutex
	committed map[int]int64 // partition -> highest offset committed by this source
	// Per partition, in the current generation (genVersion): the offset to
	// commit after the last message handed out (delivered), an offset past
	// skipped records to commit once everything delivered is acked (skip),
	// the first fetch offset (first) and the end the last fetch saw (end:
	// the last stable offset, or the high watermark with read_uncommitted).
	genVersion int64
	delivered  map[int]int64
	skip       map[int]int64
	first      map[int]int64
	end        map[int]int64
	hw         map[int]int64 // the high watermark the last fetch saw

	lifeMu   sync.Mutex // serializes Restart and Close
	closed   bool
	closeErr error
}

// NewKafka creates a Kafka source; it connects lazily (the consumer group
// joins in the background and the first ReadBatch waits for it).
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
	iso, err := ParseIsolationLevel(cfg.IsolationLevel)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	if err := cfg.Conn.Validate(); err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	dialer, err := cfg.Conn.Dialer()
	if err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	k := &Kafka{
		conn:       cfg.Conn,
		dialer:     dialer,
		topic:      cfg.Topic,
		group:      cfg.GroupID,
		start:      start,
		isolation:  iso,
		fetchWait:  orDur(cfg.FetchMaxWait, DefaultFetchMaxWait),
		fetchBytes: orInt(cfg.FetchMaxBytes, DefaultFetchMaxBytes),
		maxBatch:   orInt(cfg.MaxBatch, DefaultMaxBatch),
		maxWait:    orDur(cfg.MaxWait, DefaultMaxWait),
		log:        log.With(zap.String("topic", cfg.Topic), zap.String("group", cfg.GroupID)),
		committed:  make(map[int]int64),
		delivered:  make(map[int]int64),
		skip:       make(map[int]int64),
		first:      make(map[int]int64),
		end:        make(map[int]int64),
		hw:         make(map[int]int64),
	}
	k.timing.heartbeat, k.timing.session, k.timing.rebalance = cfg.HeartbeatInterval, cfg.SessionTimeout, cfg.RebalanceTimeout
	g, err := k.newReader()
	if err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	k.cur.Store(g)
	return k, nil
}

// ParseIsolationLevel parses an isolation level: "read_committed" (the
// default, also for "") or "read_uncommitted".
func ParseIsolationLevel(s string) (kafka.IsolationLevel, error) {
	switch strings.ToLower(s) {
	case "", "read_committed":
		return kafka.ReadCommitted, nil
	case "read_uncommitted":
		return kafka.ReadUncommitted, nil
	}
	return 0, fmt.Errorf("isolation level %q: want read_committed or read_uncommitted", s)
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

// Skipped is how many records the source dropped since it was created:
// records of aborted transactions, and control records (transaction
// commit and abort markers).
func (k *Kafka) Skipped() (aborted, control int64) { return k.aborted.Load(), k.control.Load() }

func (k *Kafka) skipped(aborted, control int) {
	k.aborted.Add(int64(aborted))
	k.control.Add(int64(control))
}

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
	g, err := k.newReader()
	if err != nil {
		return fmt.Errorf("kafka source %s: restart: %w", k.topic, err)
	}
	old := k.cur.Swap(g)
	k.restarts.Add(1)
	if err := old.close(); err != nil {
		return fmt.Errorf("kafka source %s: restart: close the old reader: %w", k.topic, err)
	}
	return nil
}

// newGeneration resets the per-generation state: partitions may have moved.
func (k *Kafka) newGeneration(v int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.genVersion = v
	clear(k.delivered)
	clear(k.skip)
	clear(k.first)
	clear(k.end)
	clear(k.hw)
}

// observe records what a fetch of a partition saw: its fetch offset (the
// partition's start in the generation, for the first), its end and its
// high watermark.
func (k *Kafka) observe(version int64, part int, offset, end, hw int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if version != k.genVersion {
		return
	}
	if _, ok := k.first[part]; !ok {
		k.first[part] = offset
	}
	k.end[part] = end
	k.hw[part] = hw
}

// Unstable is how many records of the partitions fetched in the current
// generation lie past their last stable offset: in transactions still open
// and after them, which a read_committed source cannot read yet (0 with
// read_uncommitted). A transaction left open shows here, not as lag.
func (k *Kafka) Unstable() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	var sum int64
	for p, hw := range k.hw {
		sum += max(0, hw-k.end[p])
	}
	return sum
}

// next returns the next chunk of the current generation for ReadBatch, or
// an error, or false when timer fires first (a nil timer never fires).
func (k *Kafka) next(ctx context.Context, timer <-chan time.Time) (chunk, bool, error) {
	for {
		g := k.cur.Load()
		// Chunks before errors.
		select {
		case c := <-g.chunks:
			if c.version == g.version.Load() {
				return c, true, nil
			}
			continue // an ended generation's: its partitions may have moved
		default:
		}
		select {
		case c := <-g.chunks:
			if c.version == g.version.Load() {
				return c, true, nil
			}
		case err := <-g.errs:
			return chunk{}, false, markRead(fmt.Errorf("kafka source %s: read: %w", k.topic, kafkaconn.Classify(err)))
		case <-g.done:
			if k.cur.Load() == g {
				return chunk{}, false, markRead(fmt.Errorf("kafka source %s: read: %w", k.topic, io.ErrClosedPipe))
			}
			// Restart replaced the reader: read from the new one.
		case <-timer:
			return chunk{}, false, nil
		case <-ctx.Done():
			return chunk{}, false, ctx.Err()
		}
	}
}

// ReadBatch returns the next batch: at least one message, at most MaxBatch.
func (k *Kafka) ReadBatch(ctx context.Context) (message.Batch, error) {
	var msgs []message.Message
	last := make(map[int]int64, 4) // partition -> offset to commit after its last message
	var timer <-chan time.Time
	for len(msgs) < k.maxBatch {
		if k.pendIdx < len(k.pend.msgs) && k.pend.version != k.cur.Load().version.Load() {
			k.pend.msgs = nil // an ended generation's: its partition may have moved
		}
		if k.pendIdx >= len(k.pend.msgs) {
			c, ok, err := k.next(ctx, timer)
			if err != nil {
				if len(msgs) > 0 {
					break // return what we have; the error shows on the next call
				}
				return message.Batch{}, err
			}
			if !ok {
				break // MaxWait after the first message
			}
			k.pend, k.pendIdx = c, 0
			if len(c.msgs) == 0 {
				k.skipTo(ctx, c)
				continue
			}
		}
		c := &k.pend
		n := min(k.maxBatch-len(msgs), len(c.msgs)-k.pendIdx)
		take := c.msgs[k.pendIdx : k.pendIdx+n]
		k.pendIdx += n
		msgs = append(msgs, take...)
		off := take[n-1].Offset + 1
		if k.pendIdx == len(c.msgs) {
			off = c.next // past records skipped after the last message
			c.msgs = nil
		}
		last[c.part] = off
		k.mu.Lock()
		if c.version == k.genVersion {
			k.delivered[c.part] = off
		}
		k.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(k.maxWait)
			defer t.Stop()
			timer = t.C
		}
	}
	return message.Batch{Messages: msgs, Ack: func(ctx context.Context) error { return k.ack(ctx, last) }}, nil
}

// skipTo handles a fetch that held only skipped records (an aborted
// transaction, a transaction marker): their offsets are committed at once
// when everything handed out before them is acknowledged, or else by the
// Ack that acknowledges it.
func (k *Kafka) skipTo(ctx context.Context, c chunk) {
	k.mu.Lock()
	if c.version != k.genVersion {
		k.mu.Unlock()
		return
	}
	d, ok := k.delivered[c.part]
	if ok && k.committed[c.part] < d {
		k.skip[c.part] = c.next
		k.mu.Unlock()
		return
	}
	k.delivered[c.part] = c.next
	k.mu.Unlock()
	if err := k.ack(ctx, map[int]int64{c.part: c.next}); err != nil {
		k.log.Debug("commit past skipped records failed; a later commit covers them", zap.Int("partition", c.part), zap.Error(err))
	}
}

func (k *Kafka) ack(ctx context.Context, next map[int]int64) error {
	k.mu.Lock()
	commits := make(map[int]int64, len(next))
	for p, off := range next {
		if c, ok := k.committed[p]; ok && c >= off {
			continue // an equal or later offset is already committed
		}
		commits[p] = off
	}
	k.mu.Unlock()
	if len(commits) == 0 {
		return nil
	}
	if err := k.commitWait(ctx, commits); err != nil {
		return fmt.Errorf("kafka source %s: ack %d partition(s): %w", k.topic, len(commits), kafkaconn.Classify(err))
	}
	k.mu.Lock()
	more := map[int]int64{}
	for p, off := range commits {
		if c, ok := k.committed[p]; !ok || off > c {
			k.committed[p] = off
		}
		// Everything handed out is acknowledged: commit past the
		// records skipped after it.
		if s, ok := k.skip[p]; ok && k.committed[p] >= k.delivered[p] {
			delete(k.skip, p)
			if s > k.committed[p] {
				k.delivered[p] = s
				more[p] = s
			}
		}
	}
	k.mu.Unlock()
	if len(more) > 0 {
		return k.ack(ctx, more)
	}
	return nil
}

// commitWait commits through the current reader, waiting (within ctx) for
// it to join the group when it is between generations.
func (k *Kafka) commitWait(ctx context.Context, offsets map[int]int64) error {
	for {
		g := k.cur.Load()
		if g.gen.Load() != nil {
			return g.commit(offsets)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not a member of the group: %w", ctx.Err())
		case <-g.done:
			if k.cur.Load() == g {
				return io.ErrClosedPipe
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Lag returns the consumer lag summed over the partitions this source
// fetched in the current generation (best effort): per partition, the end
// its last fetch saw (the last stable offset; the high watermark with
// read_uncommitted) minus the offset after the last message returned (or
// its first fetch offset, before any).
func (k *Kafka) Lag() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	var sum int64
	for p, end := range k.end {
		pos, ok := k.delivered[p]
		if !ok {
			pos = k.first[p]
		}
		sum += max(0, end-pos)
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
		if err := k.cur.Load().close(); err != nil {
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
