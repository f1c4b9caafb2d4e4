package sinks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
)

// Defaults for KafkaConfig.
const (
	DefaultBatchTimeout = 2 * time.Millisecond
	// DefaultBatchBytes keeps a produce batch below the broker's default
	// message.max.bytes (1048588) including record overhead.
	DefaultBatchBytes = 1_000_000
)

// KafkaConfig configures a Kafka sink.
type KafkaConfig struct {
	Conn  kafkaconn.Config
	Topic string
	// BatchTimeout is how long a partition's batch waits for more messages
	// before it is sent (default 2ms).
	BatchTimeout time.Duration
	// BatchBytes bounds one produce batch and hence one message (default
	// 1,000,000).
	BatchBytes int64
	// Compression is "", snappy, lz4 or zstd (also "gzip", "none").
	Compression string
	// AllowAutoTopicCreation lets the broker create a missing topic on first
	// write; off by default (create topics with kafkaconn.EnsureTopics).
	AllowAutoTopicCreation bool
}

// Kafka is a synchronous Kafka sink.
type Kafka struct {
	conn  kafkaconn.Config
	w     *kafka.Writer
	t     *kafka.Transport
	topic string
	log   *zap.Logger

	closeOnce sync.Once
}

var _ message.Sink = (*Kafka)(nil)

// NewKafka creates a Kafka sink with its own Transport.
func NewKafka(cfg KafkaConfig, log *zap.Logger) (*Kafka, error) {
	if log == nil {
		log = zap.NewNop()
	}
	var errs []error
	if cfg.Topic == "" {
		errs = append(errs, errors.New("topic is required"))
	}
	if cfg.BatchTimeout < 0 {
		errs = append(errs, fmt.Errorf("batch timeout must be >= 0, got %v", cfg.BatchTimeout))
	}
	if cfg.BatchBytes < 0 {
		errs = append(errs, fmt.Errorf("batch bytes must be >= 0, got %d", cfg.BatchBytes))
	}
	var comp kafka.Compression
	switch strings.ToLower(cfg.Compression) {
	case "", "none":
	case "gzip":
		comp = kafka.Gzip
	case "snappy":
		comp = kafka.Snappy
	case "lz4":
		comp = kafka.Lz4
	case "zstd":
		comp = kafka.Zstd
	default:
		errs = append(errs, fmt.Errorf("compression %q: want none, snappy, lz4, zstd or gzip", cfg.Compression))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new kafka sink: %w", err)
	}
	t, err := cfg.Conn.Transport()
	if err != nil {
		return nil, fmt.Errorf("new kafka sink: %w", err)
	}
	bt := cfg.BatchTimeout
	if bt == 0 {
		bt = DefaultBatchTimeout
	}
	bb := cfg.BatchBytes
	if bb == 0 {
		bb = DefaultBatchBytes
	}
	k := &Kafka{conn: cfg.Conn, t: t, topic: cfg.Topic, log: log.With(zap.String("topic", cfg.Topic))}
	k.w = &kafka.Writer{
		Addr:         kafka.TCP(cfg.Conn.Brokers...),
		Topic:        cfg.Topic,
		Balancer:     &kafka.Hash{},
		MaxAttempts:  5,
		BatchSize:    10_000, // bytes and time bound the batches
		BatchBytes:   bb,
		BatchTimeout: bt,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		RequiredAcks: kafka.RequireAll,
		Async:        false,
		Compression:  comp,
		Transport:    t,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Warn(fmt.Sprintf(msg, args...))
		}),
		AllowAutoTopicCreation: cfg.AllowAutoTopicCreation,
	}
	return k, nil
}

// Write sends msgs and returns once all are acknowledged by all in-sync
// replicas, or the first error.
func (k *Kafka) Write(ctx context.Context, msgs []message.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	km := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		km[i] = kafka.Message{Key: m.Key, Value: m.Value, Headers: headersOut(m.Headers)}
	}
	if err := k.w.WriteMessages(ctx, km...); err != nil {
		err = fmt.Errorf("kafka sink %s: write %d message(s): %w", k.topic, len(msgs), kafkaconn.Classify(summarize(err)))
		if IsTooLarge(err) {
			err = message.Mark(err, message.ErrTooLarge)
		}
		return err
	}
	return nil
}

// ErrTooLarge marks a write the sink refused because a message exceeds its
// size limit (BatchBytes, or the broker's max.message.bytes): retrying the
// same message cannot succeed. Kafka.Write marks such errors with it.
var ErrTooLarge = message.ErrTooLarge

// headersOut converts message headers to kafka-go headers.
func headersOut(hs []message.Header) []kafka.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// IsTooLarge reports whether err is a too-large refusal (ErrTooLarge or
// the broker's MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE).
func IsTooLarge(err error) bool {
	return errors.Is(err, ErrTooLarge) || errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge)
}

// summarize keeps errors short: a WriteErrors lists one error per message.
func summarize(err error) error {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		failed := 0
		var first error
		for _, e := range we {
			if e != nil {
				failed++
				if first == nil {
					first = e
				}
			}
		}
		return fmt.Errorf("%d of %d failed, first: %w", failed, len(we), first)
	}
	var tooLarge kafka.MessageTooLargeError
	if errors.As(err, &tooLarge) {
		return fmt.Errorf("a message of %d bytes exceeds batch bytes: %w", len(tooLarge.Message.Key)+len(tooLarge.Message.Value), kafka.MessageSizeTooLarge)
	}
	return err
}

// Connect implements message.Sink: it dials a broker and authenticates
// (kafkaconn.CheckConnection); the writer itself connects on its first
// write and redials by itself. A rejected credential or TLS handshake is
// marked message.ErrFatal, anything else message.ErrNotConnected.
func (k *Kafka) Connect(ctx context.Context) error {
	err := kafkaconn.CheckConnection(ctx, k.conn)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kafkaconn.ErrAuth) || errors.Is(err, kafkaconn.ErrTLS):
		return message.Mark(fmt.Errorf("kafka sink %s: connect: %w", k.topic, err), message.ErrFatal)
	default:
		return message.Mark(fmt.Errorf("kafka sink %s: connect: %w", k.topic, err), message.ErrNotConnected)
	}
}

// Close flushes pending writes and releases the connections. Idempotent.
func (k *Kafka) Close() error {
	var err error
	k.closeOnce.Do(func() {
		if e := k.w.Close(); e != nil {
			err = fmt.Errorf("kafka sink %s: close: %w", k.topic, e)
		}
		k.t.CloseIdleConnections()
	})
	return err
}
