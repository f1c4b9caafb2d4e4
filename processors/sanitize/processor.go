package sanitize

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// Route names the processor writes to (the app wires a sink to each; so
// does `dpsurv sanitize`). They are also the values of the sink label of
// dpsurv_sink_errors_total.
const (
	RouteOutput     = "output"      // sanitized records
	RouteDeadLetter = "dead_letter" // dead letters, one JSON object each
)

// Decoder turns an input message into the good rows in canonical form
// (never nil; the caller releases it) and the dead letters of its bad
// rows. A file source is one: it decodes and validates the file itself
// (row indices over the whole file, duplicate ids across the file) and
// hands the processor the decoded batch its message stands for.
type Decoder interface {
	Decode(msg message.Message) (good arrow.Record, dead []schemas.DeadLetter)
}

// Reasons of dead letters the processor and its failure routes add to the
// validator's (schemas.Reason*).
const (
	// ReasonUnprocessable: a message that passed validation but a later
	// stage (sanitizer, encoder) failed on it; its good rows are
	// dead-lettered with it (the raw message, or a reference to it).
	ReasonUnprocessable = "unprocessable"
	// ReasonOutputTooLarge: a sanitized message of a single record that
	// the sink (the broker) rejects as too large.
	ReasonOutputTooLarge = "output_too_large"
)

// DefaultMaxMessageBytes bounds every message dpsurv writes (key, value
// and headers): below the broker's default message.max.bytes (1,048,588)
// with room for the record-batch overhead.
// It equals sinks.DefaultBatchBytes (app tests that they agree; this
// package does not import the Kafka sinks).
const DefaultMaxMessageBytes = 1_000_000

// DefaultMaxDeadRows is how many failed rows of one message are
// dead-lettered verbatim; later ones are summarized per reason.
const DefaultMaxDeadRows = 100

// messageOverhead is reserved per message for the record framing and the
// source header.
const messageOverhead = 512

// maxKeyBytes: an input key longer than this is not copied onto outputs
// (it could not fit, and it routes nothing a shorter key would not).
const maxKeyBytes = 4096

// Processor validates, sanitizes and encodes input messages
// (pipeline.Processor). It never returns an error for a message (bad
// input, or input a later stage cannot handle, is dead-lettered on
// RouteDeadLetter with a reason).
type Processor struct {
	// NoTraceContext leaves the input's W3C trace context off the
	// sanitized messages (output.trace_context: false).
	NoTraceContext bool
	Validator      *schemas.Validator
	Chain          *sanitizers.Chain
	Format         string // arrow | json
	// Decoder, when set, decodes messages instead of Validator and Format
	// (the file source of `dpsurv sanitize`).
	Decoder Decoder
	Mem     memory.Allocator
	Metrics *Metrics
	Log     *zap.Logger
	// MaxMessageBytes bounds each output and dead-letter message (key,
	// value and headers; default DefaultMaxMessageBytes): a sanitized
	// batch is split into several messages, a dead letter truncated.
	MaxMessageBytes int

	clamped atomic.Int64
}

// Clamped is the number of time values the processor moved into
// [0, TimeMax] before the time mechanism so far.
func (p *Processor) Clamped() int64 { return p.clamped.Load() }

func (p *Processor) maxBytes() int { return maxBytesOr(p.MaxMessageBytes) }

func maxBytesOr(n int) int {
	if n > 0 {
		return n
	}
	return DefaultMaxMessageBytes
}

// Process implements pipeline.Processor. Each routed message's Rows is the
// number of input records it stands for (their sum is the records decoded
// from msg, good and bad); a dead letter's Reason is its reason.
func (p *Processor) Process(_ context.Context, msg message.Message) (res []pipeline.Routed, err error) {
	recordsIn := 0
	defer func() {
		if r := recover(); r != nil {
			// A bug a message can trigger must not stop the service:
			// dead-letter the message.
			res = []pipeline.Routed{deadRouted(schemas.DeadLetter{Reason: ReasonUnprocessable, RowIndex: -1,
				Detail: fmt.Sprintf("processing failed: %v", r), Raw: msg.Value}, msg, p.maxBytes(), recordsIn)}
			err = nil
		}
	}()
	var (
		good arrow.Record
		dead []schemas.DeadLetter
	)
	switch {
	case p.Decoder != nil:
		good, dead = p.Decoder.Decode(msg)
	case p.Format == "json":
		good, dead = p.Validator.DecodeJSON(msg.Value)
	default:
		good, dead = p.Validator.DecodeIPC(msg.Value)
	}
	defer good.Release()
	rows := int(good.NumRows())
	recordsIn = rows
	for _, d := range dead {
		recordsIn += d.Rows()
	}
	for _, d := range dead {
		res = append(res, deadRouted(d, msg, p.maxBytes(), d.Rows()))
	}
	if rows == 0 {
		return res, nil
	}
	out, st, err := p.Chain.Apply(good)
	if err != nil {
		return p.failGood(res, msg, rows, fmt.Sprintf("sanitize: %v", err)), nil
	}
	defer out.Release()
	// Never the input key, no input header but the W3C trace context
	// (SanitizedKey, outHeaders).
	key, hdr := SanitizedKey(msg.Partition), outHeaders(msg)
	if p.NoTraceContext {
		hdr = []message.Header{sourceHeader(msg)}
	}
	budget := p.maxBytes() - messageOverhead - len(key) - headerBytes(hdr)
	parts, partRows, err := encodeSplit(out, p.Mem, budget)
	if err != nil {
		return p.failGood(res, msg, rows, fmt.Sprintf("encode sanitized batch: %v", err)), nil
	}
	if st.ClampedTime > 0 {
		p.clamped.Add(int64(st.ClampedTime))
		p.Metrics.Clamped.WithLabelValues("time").Add(float64(st.ClampedTime))
	}
	if st.Updates > 0 {
		p.Metrics.RecordUpdates.Add(float64(st.Updates))
	}
	for i, b := range parts {
		if b == nil { // one record that cannot fit
			res = append(res, deadRouted(schemas.DeadLetter{Reason: ReasonOutputTooLarge, RowIndex: 0, Count: partRows[i],
				Detail: fmt.Sprintf("a sanitized record does not fit in %d bytes; replay the source message", p.maxBytes())}, msg, p.maxBytes(), partRows[i]))
			continue
		}
		res = append(res, pipeline.Routed{Route: RouteOutput, Msg: message.Message{Key: key, Value: b, Headers: hdr}, Rows: partRows[i]})
	}
	return res, nil
}

// failGood dead-letters the good rows of a message a later stage failed
// on, keeping the validator's dead letters.
func (p *Processor) failGood(res []pipeline.Routed, msg message.Message, rows int, detail string) []pipeline.Routed {
	return append(res, deadRouted(schemas.DeadLetter{Reason: ReasonUnprocessable, RowIndex: -1, Detail: detail, Raw: msg.Value}, msg, p.maxBytes(), rows))
}

// encodeSplit encodes rec as one or more IPC streams of at most budget
// bytes each, splitting its rows; a single row that does not fit gives a
// nil part.
func encodeSplit(rec arrow.Record, mem memory.Allocator, budget int) ([][]byte, []int, error) {
	var parts [][]byte
	var rows []int
	var walk func(r arrow.Record) error
	walk = func(r arrow.Record) error {
		n := int(r.NumRows())
		b, err := arrowipc.Encode(r, mem)
		if err != nil {
			return err
		}
		if len(b) <= budget {
			parts = append(parts, b)
			rows = append(rows, n)
			return nil
		}
		if n <= 1 {
			parts = append(parts, nil)
			rows = append(rows, n)
			return nil
		}
		// Split into as many pieces as the size suggests (plus slack for
		// the per-stream schema), each checked again.
		k := min(n, max(2, (len(b)+budget-1)/budget+1))
		for i := 0; i < k; i++ {
			lo, hi := int64(i*n/k), int64((i+1)*n/k)
			if lo == hi {
				continue
			}
			s := r.NewSlice(lo, hi)
			err := walk(s)
			s.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(rec); err != nil {
		return nil, nil, err
	}
	return parts, rows, nil
}

// Passthrough consumes and produces the same Arrow batches without
// validating or sanitizing them: each message's IPC stream is decoded and
// re-encoded unchanged. `dpsurv bench` measures the sanitizing pipeline
// against it. With Raw set it copies the message bytes without decoding.
type Passthrough struct {
	Mem memory.Allocator
	Raw bool
}

// Process implements pipeline.Processor.
func (p Passthrough) Process(_ context.Context, msg message.Message) ([]pipeline.Routed, error) {
	h := outHeaders(msg)
	if p.Raw {
		return []pipeline.Routed{{Route: RouteOutput, Msg: message.Message{Key: msg.Key, Value: msg.Value, Headers: h}}}, nil
	}
	mem := p.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	recs, err := arrowipc.DecodeRecords(msg.Value, mem)
	if err != nil {
		return nil, fmt.Errorf("passthrough decode: %w", err)
	}
	var res []pipeline.Routed
	for _, r := range recs {
		b, err := arrowipc.Encode(r, mem)
		n := int(r.NumRows())
		r.Release()
		if err != nil {
			return nil, fmt.Errorf("passthrough encode: %w", err)
		}
		res = append(res, pipeline.Routed{Route: RouteOutput, Msg: message.Message{Key: msg.Key, Value: b, Headers: h}, Rows: n})
	}
	return res, nil
}
