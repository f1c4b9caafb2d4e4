package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// Source is what the stream reads from (sources.Kafka in the service).
type Source interface {
	ReadBatch(ctx context.Context) (sources.Batch, error)
	Close() error
}

// Result is what processing one input message produced.
type Result struct {
	Out     []sinks.Message // to the sanitized (or passthrough) sink
	Dead    []sinks.Message // to the dead-letter sink
	Records int             // records in Out
}

// Processor turns one input message into output messages. It must be safe
// for concurrent use and must not retain msg.
type Processor interface {
	Process(msg sources.Message) (Result, error)
}

// Observer sees every validated good batch after sanitizing, before the
// batch is acknowledged (the aggregators' entry point). It must not retain
// rec past the call without Retain.
type Observer interface {
	Observe(ctx context.Context, msg sources.Message, good arrow.Record) error
}

// ErrStop, wrapped in a source's read error, ends the stream; any other
// read error (other than a rejected credential or TLS handshake) is treated
// as transient and retried with backoff while the stream reports not ready.
var ErrStop = errors.New("stop the stream")

// HeaderSource is the header naming the input position a sanitized or
// dead-letter message came from ("topic/partition/offset"); a redelivered
// duplicate carries the same value.
const HeaderSource = "dpsurv-source"

// SanitizeProcessor validates, sanitizes and encodes input messages.
type SanitizeProcessor struct {
	Validator *schemas.Validator
	Chain     *sanitizers.Chain
	Format    string // arrow | json
	Mem       memory.Allocator
	Metrics   *Metrics
	Observer  Observer // optional
	Log       *zap.Logger
	// CopyInputKey copies the input message's key to the sanitized message
	// instead of SanitizedKey. It exists only for the load test's latency
	// probe (its keys carry no patient data); no configuration sets it.
	CopyInputKey bool
}

// Process implements Processor.
func (p *SanitizeProcessor) Process(msg sources.Message) (Result, error) {
	var (
		good arrow.Record
		dead []schemas.DeadLetter
	)
	if p.Format == "json" {
		good, dead = p.Validator.DecodeJSON(msg.Value)
	} else {
		good, dead = p.Validator.DecodeIPC(msg.Value)
	}
	defer good.Release()
	var res Result
	src := sourceHeader(msg)
	for _, d := range dead {
		v, err := deadLetterValue(d, msg)
		if err != nil {
			return Result{}, fmt.Errorf("encode dead letter: %w", err)
		}
		res.Dead = append(res.Dead, sinks.Message{Key: msg.Key, Value: v, Headers: []kafka.Header{src}})
		p.Metrics.DeadLettered.WithLabelValues(d.Reason).Inc()
	}
	rows := int(good.NumRows())
	p.Metrics.RecordsIn.Add(float64(rows + deadRows(dead)))
	if rows == 0 {
		return res, nil
	}
	out, st, err := p.Chain.Apply(good)
	if err != nil {
		return Result{}, err
	}
	defer out.Release()
	if st.ClampedTime > 0 {
		p.Metrics.Clamped.WithLabelValues("time").Add(float64(st.ClampedTime))
	}
	if st.Updates > 0 {
		p.Metrics.RecordUpdates.Add(float64(st.Updates))
	}
	b, err := schemas.EncodeIPC(out, p.Mem)
	if err != nil {
		return Result{}, fmt.Errorf("encode sanitized batch: %w", err)
	}
	// Never the input key, never an input header (SanitizedKey).
	key := SanitizedKey(msg.Partition)
	if p.CopyInputKey {
		key = msg.Key
	}
	res.Out = append(res.Out, sinks.Message{Key: key, Value: b, Headers: []kafka.Header{src}})
	res.Records = rows
	if p.Observer != nil {
		if err := p.Observer.Observe(context.Background(), msg, good); err != nil {
			return Result{}, fmt.Errorf("observe batch: %w", err)
		}
	}
	return res, nil
}

func deadRows(dead []schemas.DeadLetter) int {
	n := 0
	for _, d := range dead {
		if d.RowIndex >= 0 {
			n++
		}
	}
	return n
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
func (p PassthroughProcessor) Process(msg sources.Message) (Result, error) {
	h := []kafka.Header{sourceHeader(msg)}
	if p.Raw {
		return Result{Out: []sinks.Message{{Key: msg.Key, Value: msg.Value, Headers: h}}}, nil
	}
	mem := p.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	recs, err := schemas.DecodeIPCRecords(msg.Value, mem)
	if err != nil {
		return Result{}, fmt.Errorf("passthrough decode: %w", err)
	}
	var res Result
	for _, r := range recs {
		b, err := schemas.EncodeIPC(r, mem)
		res.Records += int(r.NumRows())
		r.Release()
		if err != nil {
			return Result{}, fmt.Errorf("passthrough encode: %w", err)
		}
		res.Out = append(res.Out, sinks.Message{Key: msg.Key, Value: b, Headers: h})
	}
	return res, nil
}

func sourceHeader(msg sources.Message) kafka.Header {
	return kafka.Header{Key: HeaderSource, Value: []byte(msg.Topic + "/" + strconv.Itoa(msg.Partition) + "/" + strconv.FormatInt(msg.Offset, 10))}
}

// deadLetterValue is the dead-letter message: the dead letter's JSON plus
// the source position.
func deadLetterValue(d schemas.DeadLetter, msg sources.Message) ([]byte, error) {
	inner, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(inner, &fields); err != nil {
		return nil, err
	}
	srcJSON, _ := json.Marshal(map[string]any{"topic": msg.Topic, "partition": msg.Partition, "offset": msg.Offset})
	fields["source"] = srcJSON
	return json.Marshal(fields)
}

// Stream runs source -> processor -> sinks with at-least-once delivery: a
// batch is acknowledged (its offsets committed) only after the outputs and
// dead letters of every message in it are durable in their sinks.
type Stream struct {
	Source     Source
	Processor  Processor
	Out        sinks.Sink
	DeadLetter sinks.Sink
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

	ready atomic.Bool
	acked atomic.Int64
}

// Acked is the number of input messages acknowledged so far.
func (s *Stream) Acked() int64 { return s.acked.Load() }

// Ready reports whether the stream is consuming and its last write
// succeeded.
func (s *Stream) Ready() bool { return s.ready.Load() }

type processed struct {
	batch   sources.Batch
	results []Result
	start   time.Time
}

// Run consumes until ctx is cancelled or a fatal error occurs, then drains:
// batches already read are processed, written and committed (bounded by
// DrainTimeout) before it returns. It returns nil on a clean shutdown.
func (s *Stream) Run(ctx context.Context) error {
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
	readCh := make(chan sources.Batch, 2)
	procCh := make(chan processed, 2)
	errCh := make(chan error, 3)
	var wg sync.WaitGroup

	// Stage 1: read.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(readCh)
		backoff := 100 * time.Millisecond
		for {
			b, err := s.Source.ReadBatch(rctx)
			if err != nil {
				if rctx.Err() != nil {
					return
				}
				if errors.Is(err, ErrStop) || errors.Is(err, kafkaconn.ErrAuth) || errors.Is(err, kafkaconn.ErrTLS) {
					errCh <- fmt.Errorf("read batch: %w", err)
					return
				}
				// A broker outage or a coordinator move: stay alive and
				// not ready, and read again (nothing was acknowledged).
				s.ready.Store(false)
				s.Metrics.Ready.Set(0)
				s.Metrics.ReadErrors.Inc()
				s.Log.Warn("read failed; retrying", zap.Error(err), zap.Duration("backoff", backoff))
				select {
				case <-rctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, 5*time.Second)
				continue
			}
			if backoff > 100*time.Millisecond {
				backoff = 100 * time.Millisecond
				s.ready.Store(true)
				s.Metrics.Ready.Set(1)
			}
			if s.Lag != nil {
				s.Metrics.ConsumerLag.Set(float64(s.Lag()))
			}
			s.Metrics.MessagesIn.Add(float64(len(b.Messages)))
			select {
			case readCh <- b:
			case <-wctx.Done():
				return
			}
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
						results[i], errs[i] = s.Processor.Process(b.Messages[i])
					}
				}()
			}
			pw.Wait()
			if err := errors.Join(errs...); err != nil {
				// A processing error is a bug or a configuration
				// mismatch, never bad input (that is dead-lettered):
				// stop without acknowledging.
				errCh <- fmt.Errorf("process batch: %w", err)
				return
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

func (s *Stream) writeAndAck(ctx context.Context, p processed) error {
	var out, dead []sinks.Message
	records := 0
	for _, r := range p.results {
		out = append(out, r.Out...)
		dead = append(dead, r.Dead...)
		records += r.Records
	}
	backoff := 50 * time.Millisecond
	for {
		err := s.writeBoth(ctx, out, dead)
		if err == nil {
			break
		}
		s.ready.Store(false)
		s.Metrics.Ready.Set(0)
		s.Log.Warn("sink write failed; retrying", zap.Error(err), zap.Duration("backoff", backoff))
		select {
		case <-ctx.Done():
			return fmt.Errorf("write batch: %w", err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	// A failed commit is not fatal: the outputs are durable, and commits
	// are cumulative per partition, so the next successful commit covers
	// this batch; if the process dies first, the batch is redelivered and
	// re-sanitized to identical bytes. Retry briefly (a broker restart or a
	// coordinator move), then go on.
	backoff = 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := p.batch.Ack(ctx)
		if err == nil {
			break
		}
		s.Metrics.CommitErrors.Inc()
		if ctx.Err() != nil || attempt >= 5 {
			s.Log.Warn("offset commit failed; continuing (the next commit covers it, a redelivery is identical)", zap.Error(err))
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
	s.ready.Store(true)
	s.Metrics.Ready.Set(1)
	s.acked.Add(int64(len(p.batch.Messages)))
	s.Metrics.RecordsOut.Add(float64(records))
	s.Metrics.BatchLatency.Observe(time.Since(p.start).Seconds())
	return nil
}

func (s *Stream) writeBoth(ctx context.Context, out, dead []sinks.Message) error {
	var wg sync.WaitGroup
	var errOut, errDead error
	if len(out) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errOut = s.Out.Write(ctx, out); errOut != nil {
				s.Metrics.SinkErrors.WithLabelValues("output").Inc()
				errOut = fmt.Errorf("write output: %w", errOut)
			}
		}()
	}
	if len(dead) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errDead = s.DeadLetter.Write(ctx, dead); errDead != nil {
				s.Metrics.SinkErrors.WithLabelValues("dead_letter").Inc()
				errDead = fmt.Errorf("write dead letters: %w", errDead)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errOut, errDead)
}
