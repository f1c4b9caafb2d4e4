package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/internal/retry"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// Source is what the stream reads from (sources.Kafka in the service).
type Source = message.Source

// Result is what processing one input message produced.
type Result struct {
	Out     []message.Message // to the sanitized (or passthrough) sink
	Dead    []message.Message // to the dead-letter sink
	Records int               // records in Out
	// OutRows is the number of records in each Out message (parallel to
	// Out; empty when unknown). A message the sink rejects as too large
	// becomes a dead letter of that many rows.
	OutRows []int
	// DeadInfo describes each Dead message (parallel to Dead; empty when
	// unknown): its reason and the decoded rows it stands for.
	DeadInfo []DeadInfo
	// RecordsIn is the number of rows decoded from the input message
	// (good and bad); RecordsIn = Records + the Rows of DeadInfo.
	RecordsIn int
	// Clamped is the number of time values moved into [0, TimeMax]
	// before the time mechanism.
	Clamped int
}

// Decoder turns an input message into the good rows in canonical form
// (never nil; the caller releases it) and the dead letters of its bad
// rows. A file source is one: it decodes and validates the file itself
// (row indices over the whole file, duplicate ids across the file) and
// hands the processor the decoded batch its message stands for.
type Decoder interface {
	Decode(msg message.Message) (good arrow.Record, dead []schemas.DeadLetter)
}

// DeadInfo is the accounting of one dead-letter message.
type DeadInfo struct {
	Reason string
	Rows   int // decoded rows it stands for (0 for a whole undecoded message)
}

// Processor turns one input message into output messages. It must be safe
// for concurrent use and must not retain msg.
type Processor interface {
	Process(msg message.Message) (Result, error)
}

// ErrStop, wrapped in a source's read error, ends the stream, as
// message.ErrEndOfInput and message.ErrFatal do; any other read error is
// treated as transient and retried with backoff while the stream reports
// not ready.
var ErrStop = errors.New("stop the stream")

// HeaderSource is the header naming the input position a sanitized or
// dead-letter message came from ("topic/partition/offset"); a redelivered
// duplicate carries the same value.
const HeaderSource = "dpsurv-source"

// Reasons of dead letters the processor and stream add to the validator's
// (schemas.Reason*).
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

// SanitizeProcessor validates, sanitizes and encodes input messages. It
// never returns an error for a message (bad input, or input a later stage
// cannot handle, is dead-lettered with a reason).
type SanitizeProcessor struct {
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
}

func (p *SanitizeProcessor) maxBytes() int {
	if p.MaxMessageBytes > 0 {
		return p.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// Process implements Processor.
func (p *SanitizeProcessor) Process(msg message.Message) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			// A bug a message can trigger must not stop the service:
			// dead-letter the message.
			res = p.whole(msg, ReasonUnprocessable, fmt.Sprintf("processing failed: %v", r), res.RecordsIn)
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
	res.RecordsIn = rows
	for _, d := range dead {
		res.RecordsIn += d.Rows()
	}
	for _, d := range dead {
		p.addDead(&res, d, msg)
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
	res.Clamped = st.ClampedTime
	if st.ClampedTime > 0 {
		p.Metrics.Clamped.WithLabelValues("time").Add(float64(st.ClampedTime))
	}
	if st.Updates > 0 {
		p.Metrics.RecordUpdates.Add(float64(st.Updates))
	}
	for i, b := range parts {
		if b == nil { // one record that cannot fit
			p.addDead(&res, schemas.DeadLetter{Reason: ReasonOutputTooLarge, RowIndex: 0, Count: partRows[i],
				Detail: fmt.Sprintf("a sanitized record does not fit in %d bytes; replay the source message", p.maxBytes())}, msg)
			continue
		}
		res.Out = append(res.Out, message.Message{Key: key, Value: b, Headers: hdr})
		res.OutRows = append(res.OutRows, partRows[i])
		res.Records += partRows[i]
	}
	return res, nil
}

// failGood dead-letters the good rows of a message a later stage failed
// on, keeping the validator's dead letters.
func (p *SanitizeProcessor) failGood(res Result, msg message.Message, rows int, detail string) Result {
	p.addDead(&res, schemas.DeadLetter{Reason: ReasonUnprocessable, RowIndex: -1, Detail: detail, Raw: msg.Value}, msg)
	res.DeadInfo[len(res.DeadInfo)-1].Rows = rows
	return res
}

// whole is the result of a message dead-lettered as a whole after rows
// decoded rows were counted.
func (p *SanitizeProcessor) whole(msg message.Message, reason, detail string, rows int) Result {
	res := Result{RecordsIn: rows}
	p.addDead(&res, schemas.DeadLetter{Reason: reason, RowIndex: -1, Detail: detail, Raw: msg.Value}, msg)
	res.DeadInfo[0].Rows = rows
	return res
}

// addDead appends the dead-letter message of d, bounded in size.
func (p *SanitizeProcessor) addDead(res *Result, d schemas.DeadLetter, msg message.Message) {
	m := deadLetterMessage(d, msg, p.maxBytes())
	res.Dead = append(res.Dead, m)
	res.DeadInfo = append(res.DeadInfo, DeadInfo{Reason: d.Reason, Rows: d.Rows()})
}

// outKey is the input key, unless it is too long to copy.
func outKey(msg message.Message) []byte {
	if len(msg.Key) > maxKeyBytes {
		return nil
	}
	return msg.Key
}

func headerBytes(h []message.Header) int {
	n := 0
	for _, x := range h {
		n += len(x.Key) + len(x.Value) + 8
	}
	return n
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

// PassthroughProcessor consumes and produces the same Arrow batches without
// validating or sanitizing them: each message's IPC stream is decoded and
// re-encoded unchanged. `dpsurv bench` measures the sanitizing pipeline
// against it. With Raw set it copies the message bytes without decoding.
type PassthroughProcessor struct {
	Mem memory.Allocator
	Raw bool
}

// Process implements Processor.
func (p PassthroughProcessor) Process(msg message.Message) (Result, error) {
	h := outHeaders(msg)
	if p.Raw {
		return Result{Out: []message.Message{{Key: msg.Key, Value: msg.Value, Headers: h}}}, nil
	}
	mem := p.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	recs, err := arrowipc.DecodeRecords(msg.Value, mem)
	if err != nil {
		return Result{}, fmt.Errorf("passthrough decode: %w", err)
	}
	var res Result
	for _, r := range recs {
		b, err := arrowipc.Encode(r, mem)
		res.Records += int(r.NumRows())
		r.Release()
		if err != nil {
			return Result{}, fmt.Errorf("passthrough encode: %w", err)
		}
		res.Out = append(res.Out, message.Message{Key: msg.Key, Value: b, Headers: h})
	}
	return res, nil
}

func sourceHeader(msg message.Message) message.Header {
	return message.Header{Key: HeaderSource, Value: []byte(msg.Topic + "/" + strconv.Itoa(msg.Partition) + "/" + strconv.FormatInt(msg.Offset, 10))}
}

// deadLetterValue is the dead-letter message: the dead letter's JSON
// (schemas.DeadLetter.MarshalJSON) with the source position appended as
// "source": {"topic", "partition", "offset"}.
func deadLetterValue(d schemas.DeadLetter, msg message.Message) ([]byte, error) {
	inner, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	if len(inner) < 2 || inner[0] != '{' || inner[len(inner)-1] != '}' {
		return nil, errors.New("encode dead letter: not a JSON object")
	}
	topic, err := json.Marshal(msg.Topic)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(inner)+len(topic)+64)
	b = append(b, inner[:len(inner)-1]...)
	if len(inner) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"source":{"topic":`...)
	b = append(b, topic...)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(msg.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, msg.Offset, 10)
	return append(b, "}}"...), nil
}

// Bounds of the parts of a dead letter that did not fit whole.
const (
	maxDeadDetail   = 4096
	maxDeadRowValue = 1024
)

// deadLetterMessage is the dead-letter message of d, at most max bytes
// (key, value and headers). A dead letter that does not fit is cut down
// in steps: raw bytes replaced by their size, SHA-256 and a prefix (the
// source position is the reference to the full message), long row values
// and the detail truncated, and at last only the reason, detail and
// source kept.
func deadLetterMessage(d schemas.DeadLetter, msg message.Message, max int) message.Message {
	hdr := outHeaders(msg)
	key := outKey(msg)
	budget := max - messageOverhead - len(key) - headerBytes(hdr)
	var v []byte
	var err error
	full := len(d.Detail) + base64.StdEncoding.EncodedLen(len(d.Raw))
	if full <= budget { // else its raw bytes alone do not fit: no need to encode them whole
		v, err = deadLetterValue(d, msg)
		if err == nil && len(v) <= budget {
			return message.Message{Key: key, Value: v, Headers: hdr}
		}
		full = len(v)
	}
	note := fmt.Sprintf(" [dead letter truncated: %d bytes exceed the %d-byte message limit", full, max)
	if d.Raw != nil {
		sum := sha256.Sum256(d.Raw)
		note += fmt.Sprintf("; raw message of %d bytes, sha256 %s, kept as a prefix only: replay it from the source position", len(d.Raw), hex.EncodeToString(sum[:]))
		d.Raw = d.Raw[:min(len(d.Raw), budget/4)]
	}
	note += "]"
	if len(d.Detail) > maxDeadDetail {
		d.Detail = truncUTF8(d.Detail, maxDeadDetail) + "…"
	}
	d.Detail += note
	if d.Row != nil {
		row := make(map[string]any, len(d.Row))
		for k, x := range d.Row {
			switch y := x.(type) {
			case string:
				if len(y) > maxDeadRowValue {
					x = fmt.Sprintf("%s… (%d bytes)", truncUTF8(y, maxDeadRowValue), len(y))
				}
			case []byte:
				if len(y) > maxDeadRowValue {
					x = y[:maxDeadRowValue]
				}
			}
			row[k] = x
		}
		d.Row = row
	}
	if v, err = deadLetterValue(d, msg); err == nil && len(v) <= budget {
		return message.Message{Key: key, Value: v, Headers: hdr}
	}
	// Last resort: a reference only.
	ref := schemas.DeadLetter{Reason: d.Reason, RowIndex: d.RowIndex, Count: d.Count,
		Detail: truncUTF8(d.Detail, 1024) + fmt.Sprintf(" [dead letter of %d bytes reduced to a reference]", full)}
	v, _ = deadLetterValue(ref, msg)
	return message.Message{Value: v, Headers: hdr}
}

// truncUTF8 cuts s to at most n bytes at a rune boundary.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Stream runs source -> processor -> sinks with at-least-once delivery: a
// batch is acknowledged (its offsets committed) only after the outputs and
// dead letters of every message in it are durable in their sinks.
type Stream struct {
	Source     Source
	Processor  Processor
	Out        message.Sink
	DeadLetter message.Sink
	Metrics    *Metrics
	Log        *zap.Logger
	// Workers processing messages of one batch in parallel (default
	// GOMAXPROCS).
	Workers int
	// DrainTimeout bounds the final writes and commits after the context
	// is cancelled (default 10 s).
	DrainTimeout time.Duration
	// Lag reports consumer lag for the metric (optional).
	Lag func() int64
	// MaxMessageBytes bounds the dead letters the stream itself writes
	// (default DefaultMaxMessageBytes).
	MaxMessageBytes int

	ready atomic.Bool
	acked atomic.Int64
}

// Acked is the number of input messages acknowledged so far.
func (s *Stream) Acked() int64 { return s.acked.Load() }

// Ready reports whether the stream is consuming and its last write
// succeeded.
func (s *Stream) Ready() bool { return s.ready.Load() }

type processed struct {
	batch   message.Batch
	results []Result
	start   time.Time
}

// Run connects the sinks and then the source (retrying while they fail;
// an error marked message.ErrFatal ends it), consumes until ctx is
// cancelled or a fatal error occurs, then drains:
// batches already read are processed, written and committed (bounded by
// DrainTimeout) before it returns. It returns nil on a clean shutdown.
func (s *Stream) Run(ctx context.Context) error {
	// Sinks first, the source last (readLoop connects it).
	if err := s.connectSinks(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	workers := s.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	drain := s.DrainTimeout
	if drain <= 0 {
		drain = 10 * time.Second
	}
	// The write stage outlives ctx by the drain timeout.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	stopAfterDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(drain, wcancel)
		_ = t
	})
	defer stopAfterDrain()

	// The reader stops on ctx or on a fatal error downstream.
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	readCh := make(chan message.Batch, 2)
	procCh := make(chan processed, 2)
	errCh := make(chan error, 3)
	var wg sync.WaitGroup

	// Stage 1: read.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(readCh)
		err := readLoop(rctx, s.Source, readHooks{
			failed: func(err error, wait time.Duration) {
				// A broker outage or a coordinator move: stay alive and
				// not ready, and read again (nothing was acknowledged).
				s.ready.Store(false)
				s.Metrics.Ready.Set(0)
				s.Metrics.ReadErrors.Inc()
				s.Log.Warn("read failed; retrying", zap.Error(err), zap.Duration("backoff", wait))
			},
			recovered: func() {
				s.ready.Store(true)
				s.Metrics.Ready.Set(1)
			},
			send: func(b message.Batch) bool {
				if s.Lag != nil {
					s.Metrics.ConsumerLag.Set(float64(s.Lag()))
				}
				s.Metrics.MessagesIn.Add(float64(len(b.Messages)))
				select {
				case readCh <- b:
					return true
				case <-wctx.Done():
					return false
				}
			},
		})
		if err != nil {
			errCh <- fmt.Errorf("read batch: %w", err)
		}
	}()

	// Stage 2: process (parallel within a batch, order preserved).
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(procCh)
		for b := range readCh {
			start := time.Now()
			results := make([]Result, len(b.Messages))
			errs := make([]error, len(b.Messages))
			var next atomic.Int64
			var pw sync.WaitGroup
			for range min(workers, len(b.Messages)) {
				pw.Add(1)
				go func() {
					defer pw.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= len(b.Messages) {
							return
						}
						results[i], errs[i] = s.process(b.Messages[i])
					}
				}()
			}
			pw.Wait()
			for i, err := range errs {
				if err == nil {
					continue
				}
				// No message may stop the service (it would stop it
				// again after every restart): dead-letter it.
				s.Metrics.ProcessErrors.Inc()
				// The error may quote record values: it goes to the dead
				// letter only, not to the log.
				s.Log.Error("processing a message failed; dead-lettered as unprocessable (the cause is in the dead letter)",
					zap.String("source", string(sourceHeader(b.Messages[i]).Value)))
				d := schemas.DeadLetter{Reason: ReasonUnprocessable, RowIndex: -1, Raw: b.Messages[i].Value,
					Detail: fmt.Sprintf("processing failed: %v", err)}
				results[i] = Result{Dead: []message.Message{deadLetterMessage(d, b.Messages[i], s.maxBytes())},
					DeadInfo: []DeadInfo{{Reason: ReasonUnprocessable}}}
			}
			select {
			case procCh <- processed{batch: b, results: results, start: start}:
			case <-wctx.Done():
				return
			}
		}
	}()

	// Stage 3: write and acknowledge, in order.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for p := range procCh {
			if err := s.writeAndAck(wctx, p); err != nil {
				if wctx.Err() == nil {
					errCh <- err
				}
				// Drain the channel so upstream stages can exit.
				for range procCh {
				}
				return
			}
		}
	}()

	s.ready.Store(true)
	s.Metrics.Ready.Set(1)
	var runErr error
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case runErr = <-errCh:
		rcancel()
		wcancel()
		<-done
	}
	s.ready.Store(false)
	s.Metrics.Ready.Set(0)
	if runErr == nil {
		select {
		case runErr = <-errCh:
		default:
		}
	}
	return runErr
}

// endsRun reports whether a read error ends the run (rather than being
// retried).
func endsRun(err error) bool {
	return errors.Is(err, ErrStop) || errors.Is(err, message.ErrEndOfInput) || errors.Is(err, message.ErrFatal)
}

// process runs the processor on one message; a panic is an error.
func (s *Stream) process(msg message.Message) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return s.Processor.Process(msg)
}

func (s *Stream) maxBytes() int {
	if s.MaxMessageBytes > 0 {
		return s.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// Retry delays of writeAndAck: sink writes are retried until they succeed
// (or the drain ends), an offset commit ackAttempts more times.
const (
	writeBackoffMin = 50 * time.Millisecond
	writeBackoffMax = 5 * time.Second
	ackBackoffMin   = 50 * time.Millisecond
	ackBackoffMax   = 2 * time.Second
	ackAttempts     = 5
)

// pending is one message still to be written, with its accounting.
type pending struct {
	msg    message.Message
	rows   int    // records (output) or rows (dead letter) it carries
	reason string // dead letters only
	source message.Message
}

func (s *Stream) writeAndAck(ctx context.Context, p processed) error {
	var out, dead []pending
	recordsIn := 0
	for i, r := range p.results {
		src := p.batch.Messages[i]
		for j, m := range r.Out {
			n := 0
			if j < len(r.OutRows) {
				n = r.OutRows[j]
			} else if len(r.Out) == 1 {
				n = r.Records
			}
			out = append(out, pending{msg: m, rows: n, source: src})
		}
		for j, m := range r.Dead {
			var info DeadInfo
			if j < len(r.DeadInfo) {
				info = r.DeadInfo[j]
			}
			dead = append(dead, pending{msg: m, rows: info.Rows, reason: info.Reason, source: src})
		}
		recordsIn += r.RecordsIn
	}
	// Each sink is retried on its own until it has everything: a sink that
	// succeeded is never written again (no duplicates while the other one
	// fails). A message the broker rejects as too large is not retried:
	// an output becomes a dead letter, a dead letter a reference.
	records, deadRows := 0, 0
	deadBy := map[string]int{}
	bo := retry.New(writeBackoffMin, writeBackoffMax)
	for len(out) > 0 || len(dead) > 0 {
		var wg sync.WaitGroup
		var errOut, errDead error
		var tooLargeOut, tooLargeDead []pending
		if len(out) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ok []pending
				ok, tooLargeOut, out, errOut = s.write(ctx, s.Out, out)
				for _, x := range ok {
					records += x.rows
				}
				if errOut != nil {
					s.Metrics.SinkErrors.WithLabelValues("output").Inc()
					errOut = fmt.Errorf("write output: %w", errOut)
				}
			}()
		}
		if len(dead) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ok []pending
				ok, tooLargeDead, dead, errDead = s.write(ctx, s.DeadLetter, dead)
				for _, x := range ok {
					deadRows += x.rows
					deadBy[x.reason] += max(x.rows, 1)
				}
				if errDead != nil {
					s.Metrics.SinkErrors.WithLabelValues("dead_letter").Inc()
					errDead = fmt.Errorf("write dead letters: %w", errDead)
				}
			}()
		}
		wg.Wait()
		for _, x := range tooLargeOut {
			d := schemas.DeadLetter{Reason: ReasonOutputTooLarge, RowIndex: 0, Count: x.rows,
				Detail: fmt.Sprintf("the sink rejected a sanitized message of %d bytes as too large (set output.max_message_bytes to at most the topic's max.message.bytes); replay the source message", len(x.msg.Key)+len(x.msg.Value))}
			dead = append(dead, pending{msg: deadLetterMessage(d, x.source, s.maxBytes()), rows: x.rows, reason: ReasonOutputTooLarge, source: x.source})
		}
		for _, x := range tooLargeDead {
			d := schemas.DeadLetter{Reason: x.reason, RowIndex: -1,
				Detail: fmt.Sprintf("the dead-letter sink rejected this dead letter (%d bytes) as too large; replay the source message", len(x.msg.Key)+len(x.msg.Value))}
			v, _ := deadLetterValue(d, x.source)
			dead = append(dead, pending{msg: message.Message{Value: v, Headers: x.msg.Headers}, rows: x.rows, reason: x.reason, source: x.source})
		}
		err := errors.Join(errOut, errDead)
		if err == nil {
			continue
		}
		if errors.Is(err, message.ErrFatal) {
			// Retrying cannot help (a file sink's disk error): stop.
			return fmt.Errorf("write batch: %w", err)
		}
		s.ready.Store(false)
		s.Metrics.Ready.Set(0)
		s.Log.Warn("sink write failed; retrying what failed", zap.Error(err), zap.Duration("backoff", bo.Current()))
		if !bo.Wait(ctx) {
			return fmt.Errorf("write batch: %w", err)
		}
	}
	// A failed commit is not fatal: the outputs are durable, and commits
	// are cumulative per partition, so the next successful commit covers
	// this batch; if the process dies first, the batch is redelivered and
	// re-sanitized to identical bytes. Retry briefly (a broker restart or a
	// coordinator move), then go on.
	bo = retry.New(ackBackoffMin, ackBackoffMax)
	for attempt := 0; ; attempt++ {
		err := p.batch.Ack(ctx)
		if err == nil {
			break
		}
		s.Metrics.CommitErrors.Inc()
		if ctx.Err() != nil || attempt >= ackAttempts {
			s.Log.Warn("offset commit failed; continuing (the next commit covers it, a redelivery is identical)", zap.Error(err))
			break
		}
		bo.Wait(ctx)
	}
	s.ready.Store(true)
	s.Metrics.Ready.Set(1)
	s.acked.Add(int64(len(p.batch.Messages)))
	// Counted once acknowledged: records in = records out + dead-letter
	// rows over acknowledged messages.
	s.Metrics.RecordsIn.Add(float64(recordsIn))
	s.Metrics.RecordsOut.Add(float64(records))
	s.Metrics.DeadLetterRows.Add(float64(deadRows))
	for r, n := range deadBy {
		if r != "" {
			s.Metrics.DeadLettered.WithLabelValues(r).Add(float64(n))
		}
	}
	s.Metrics.BatchLatency.Observe(time.Since(p.start).Seconds())
	return nil
}

// write writes msgs to sink. On a too-large error it writes them one by
// one to find the messages the sink refuses for their size (tooLarge);
// rest is what is still to be written after err.
func (s *Stream) write(ctx context.Context, sink message.Sink, msgs []pending) (ok, tooLarge, rest []pending, err error) {
	all := make([]message.Message, len(msgs))
	for i, m := range msgs {
		all[i] = m.msg
	}
	err = sink.Write(ctx, all)
	if err == nil {
		return msgs, nil, nil, nil
	}
	if !errors.Is(err, message.ErrTooLarge) {
		return nil, nil, msgs, err
	}
	var errs []error
	for _, m := range msgs {
		e := sink.Write(ctx, []message.Message{m.msg})
		switch {
		case e == nil:
			ok = append(ok, m)
		case errors.Is(e, message.ErrTooLarge):
			s.Log.Warn("sink rejected a message as too large; dead-lettering a reference", zap.Int("bytes", len(m.msg.Key)+len(m.msg.Value)))
			tooLarge = append(tooLarge, m)
		default:
			rest = append(rest, m)
			errs = append(errs, e)
		}
	}
	return ok, tooLarge, rest, errors.Join(errs...)
}
