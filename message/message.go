package message

import (
	"context"
	"errors"
	"time"
)

// Header is one message header.
type Header struct {
	Key   string
	Value []byte
}

// Message is one record read from a source or written to a sink. The
// position fields (Topic, Partition, Offset, Time) are set by sources and
// ignored by sinks.
type Message struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Time      time.Time
}

// AckFunc acknowledges a batch (for Kafka: commits its offsets).
type AckFunc func(ctx context.Context) error

// Batch is a group of messages with the function that acknowledges them.
type Batch struct {
	Messages []Message
	Ack      AckFunc
}

// Source is what the runtime reads from. Connect and ReadBatch must not be
// called concurrently with each other or themselves; Close may be called
// from any goroutine.
type Source interface {
	// Connect establishes the source's connection (for Kafka: a dial and
	// the authentication). The runtime calls it before the first read and
	// again after a read error marked ErrNotConnected. An error marked
	// ErrFatal ends the run; any other is retried with backoff. A source
	// with nothing to connect returns nil.
	Connect(ctx context.Context) error
	// ReadBatch blocks until at least one message is available or ctx is
	// done (then it returns ctx.Err()).
	ReadBatch(ctx context.Context) (Batch, error)
	Close() error
}

// Sink is a destination for messages.
type Sink interface {
	// Connect establishes the sink's connection; the runtime calls it
	// before the first Write, with the same error rules as Source.Connect.
	// A sink reconnects by itself after that (Write errors are retried).
	Connect(ctx context.Context) error
	// Write returns nil only once every message is durable.
	Write(ctx context.Context, msgs []Message) error
	Close() error
}

// Sentinel errors (match with errors.Is).
var (
	// ErrNotConnected: the source or sink lost (or never reached) its
	// transport; the runtime retries with backoff.
	ErrNotConnected = errors.New("not connected")
	// ErrEndOfInput: the source has nothing more to give; the run ends.
	ErrEndOfInput = errors.New("end of input")
	// ErrFatal: retrying cannot help (a rejected credential, a failed TLS
	// handshake); the runtime stops.
	ErrFatal = errors.New("fatal transport error")
	// ErrTooLarge: a sink refused a message for its size; writing the same
	// message again cannot succeed.
	ErrTooLarge = errors.New("message too large")
)

// Mark returns err marked with sentinel: errors.Is(Mark(err, s), s) holds,
// errors.Is and errors.As still see err's chain, and the text is err's.
// A nil err stays nil.
func Mark(err, sentinel error) error {
	if err == nil || errors.Is(err, sentinel) {
		return err
	}
	return &marked{err: err, sentinel: sentinel}
}

type marked struct {
	err, sentinel error
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.sentinel} }
