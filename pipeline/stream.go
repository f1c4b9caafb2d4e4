package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/retry"
)

// Processor turns one input message into the messages it routes. It must be
// safe for concurrent use and must not retain msg. An error (or a panic)
// does not stop the stream: the message is handed to the stream's
// Failures, which route it (a dead letter, in the service).
type Processor interface {
	Process(ctx context.Context, msg message.Message) ([]Routed, error)
}

// Routed is an output message and the route (a name of Stream.Routes) it
// is written to.
type Routed struct {
	Route string
	Msg   message.Message
	// Rows and Reason are the processor's accounting of Msg (the records
	// it stands for, why it takes this route). The runtime does not read
	// them; it hands them to Stream.OnAck once the batch is acknowledged.
	Rows   int
	Reason string
}

// Failures routes what failed: a message the processor failed on, and an
// output its sink refused as too large. What they return is written in
// place of what failed, before the batch is acknowledged.
type Failures interface {
	// Failed routes src, on which the processor returned err or panicked.
	Failed(src message.Message, err error) []Routed
	// Rejected routes r, an output of src whose sink refused it as too
	// large (message.ErrTooLarge).
	Rejected(src message.Message, r Routed) []Routed
}

// ErrStop, wrapped in a source's read error, ends the stream, as
// message.ErrEndOfInput and message.ErrFatal do; any other read error is
// treated as transient and retried with backoff while the stream reports
// not ready.
var ErrStop = errors.New("stop the stream")

// Stream runs source -> processor -> routes with at-least-once delivery: a
// batch is acknowledged (its offsets committed) only after every message
// routed from it is durable in its route's sink.
type Stream struct {
	Source    message.Source
	Processor Processor
	// Routes are the sinks by route name (the names Processor and
	// Failures use).
	Routes map[string]message.Sink
	// Failures routes failed messages (required).
	Failures Failures
	// OnAck, when set, is called with every message written for a batch
	// after the batch is acknowledged (the processor's accounting).
	OnAck   func(written []Routed)
	Metrics *Metrics
	Log     *zap.Logger
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
	batch   message.Batch
	results [][]Routed
	start   time.Time
}

// Run connects the sinks and then the source (retrying while they fail;
// an error marked message.ErrFatal ends it), consumes until ctx is
// cancelled or a fatal error occurs, then drains:
// batches already read are processed, written and committed (bounded by
// DrainTimeout) before it returns. It returns nil on a clean shutdown.
func (s *Stream) Run(ctx context.Context) error {
	if s.Source == nil || s.Processor == nil || s.Failures == nil || len(s.Routes) == 0 {
		return errors.New("stream: Source, Processor, Routes and Failures are required")
	}
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
				return send(wctx, readCh, b)
			},
		})
		if err != nil {
			errCh <- fmt.Errorf("read batch: %w", err)
		}
	}()

	// Stage 2: process (parallel within a batch, order preserved). The
	// processors see wctx: they finish the batches already read.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(procCh)
		for b := range readCh {
			start := time.Now()
			results := make([][]Routed, len(b.Messages))
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
						results[i], errs[i] = s.process(wctx, b.Messages[i])
					}
				}()
			}
			pw.Wait()
			for i, err := range errs {
				if err == nil {
					continue
				}
				// No message may stop the service (it would stop it
				// again after every restart): route it as failed.
				s.Metrics.ProcessErrors.Inc()
				// The error may quote record values: it goes to the
				// failure route only, not to the log.
				s.Log.Error("processing a message failed; routed as failed (the cause is in the failure route)",
					zap.String("source", position(b.Messages[i])))
				results[i] = s.Failures.Failed(b.Messages[i], err)
			}
			if !send(wctx, procCh, processed{batch: b, results: results, start: start}) {
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

// position is "topic/partition/offset" of msg, for logs.
func position(msg message.Message) string {
	return msg.Topic + "/" + strconv.Itoa(msg.Partition) + "/" + strconv.FormatInt(msg.Offset, 10)
}

// endsRun reports whether a read error ends the run (rather than being
// retried).
func endsRun(err error) bool {
	return errors.Is(err, ErrStop) || errors.Is(err, message.ErrEndOfInput) || errors.Is(err, message.ErrFatal)
}

// process runs the processor on one message; a panic, or an output to a
// route the stream does not have, is an error.
func (s *Stream) process(ctx context.Context, msg message.Message) (out []Routed, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	out, err = s.Processor.Process(ctx, msg)
	if err != nil {
		return nil, err
	}
	for _, r := range out {
		if _, ok := s.Routes[r.Route]; !ok {
			return nil, fmt.Errorf("process: output to unknown route %q", r.Route)
		}
	}
	return out, nil
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

// pending is one message still to be written, with the input it came from.
type pending struct {
	Routed
	source message.Message
	// substitute: Failures.Rejected made it; a sink that rejects it too
	// is failing, not handed it again.
	substitute bool
}

func (s *Stream) writeAndAck(ctx context.Context, p processed) error {
	todo := map[string][]pending{}
	for i, rs := range p.results {
		for _, r := range rs {
			todo[r.Route] = append(todo[r.Route], pending{Routed: r, source: p.batch.Messages[i]})
		}
	}
	if err := s.checkRoutes(todo); err != nil {
		return err
	}
	// Each route is retried on its own until its sink has everything: a
	// sink that succeeded is never written again (no duplicates while
	// another one fails). A message a sink rejects as too large is not
	// retried: Failures.Rejected routes what stands for it.
	var written []Routed
	bo := retry.New(writeBackoffMin, writeBackoffMax)
	for len(todo) > 0 {
		var (
			mu       sync.Mutex
			wg       sync.WaitGroup
			errs     []error
			rejected []pending
			next     = map[string][]pending{}
		)
		for route, msgs := range todo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, tooLarge, rest, err := s.write(ctx, s.Routes[route], msgs)
				mu.Lock()
				defer mu.Unlock()
				for _, x := range ok {
					written = append(written, x.Routed)
				}
				rejected = append(rejected, tooLarge...)
				if len(rest) > 0 {
					next[route] = rest
				}
				if err != nil {
					s.Metrics.SinkErrors.WithLabelValues(route).Inc()
					errs = append(errs, fmt.Errorf("write %s: %w", route, err))
				}
			}()
		}
		wg.Wait()
		for _, x := range rejected {
			if x.substitute {
				// What stands for a rejected message is rejected too:
				// keep it and retry with backoff (nothing is dropped).
				next[x.Route] = append(next[x.Route], x)
				s.Metrics.SinkErrors.WithLabelValues(x.Route).Inc()
				errs = append(errs, fmt.Errorf("write %s: the substitute of a rejected message: %w", x.Route, message.ErrTooLarge))
				continue
			}
			for _, r := range s.Failures.Rejected(x.source, x.Routed) {
				next[r.Route] = append(next[r.Route], pending{Routed: r, source: x.source, substitute: true})
			}
		}
		if err := s.checkRoutes(next); err != nil {
			return err
		}
		todo = next
		err := errors.Join(errs...)
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
	// processed again. Retry briefly (a broker restart or a coordinator
	// move), then go on.
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
	if s.OnAck != nil {
		s.OnAck(written)
	}
	s.Metrics.BatchLatency.Observe(time.Since(p.start).Seconds())
	return nil
}

// checkRoutes fails on a route the stream does not have (Failures routed
// a message nowhere: a wiring error, retrying cannot help).
func (s *Stream) checkRoutes(todo map[string][]pending) error {
	for route := range todo {
		if _, ok := s.Routes[route]; !ok {
			return fmt.Errorf("write batch: failures routed to unknown route %q: %w", route, message.ErrFatal)
		}
	}
	return nil
}

// write writes msgs to sink. On a too-large error it writes them one by
// one to find the messages the sink refuses for their size (tooLarge);
// rest is what is still to be written after err.
func (s *Stream) write(ctx context.Context, sink message.Sink, msgs []pending) (ok, tooLarge, rest []pending, err error) {
	all := make([]message.Message, len(msgs))
	for i, m := range msgs {
		all[i] = m.Msg
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
		e := sink.Write(ctx, []message.Message{m.Msg})
		switch {
		case e == nil:
			ok = append(ok, m)
		case errors.Is(e, message.ErrTooLarge):
			s.Log.Warn("sink rejected a message as too large; routing it as failed", zap.Int("bytes", len(m.Msg.Key)+len(m.Msg.Value)))
			tooLarge = append(tooLarge, m)
		default:
			rest = append(rest, m)
			errs = append(errs, e)
		}
	}
	return ok, tooLarge, rest, errors.Join(errs...)
}

// routeNames are the stream's route names in order.
func (s *Stream) routeNames() []string {
	names := make([]string, 0, len(s.Routes))
	for n := range s.Routes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
