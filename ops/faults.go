package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/message"
)

// Source is what a pipeline stream reads from; it matches message.Source.
type Source interface {
	Connect(ctx context.Context) error
	ReadBatch(ctx context.Context) (message.Batch, error)
	Close() error
}

// ErrInjected is the error a SlowSink returns for an injected failure.
var ErrInjected = errors.New("injected sink failure")

// SlowSink wraps a sink with a delay before every write and, optionally,
// failures that happen after part of the batch was written (the case that
// makes a retried write produce duplicates).
type SlowSink struct {
	Sink message.Sink
	// Delay is added before every Write; Jitter adds a uniform extra delay
	// in [0, Jitter) drawn from Src.
	Delay, Jitter time.Duration
	// FailEvery makes every n-th Write (n >= 1) write the first half of its
	// messages to Sink and then return ErrInjected; 0 never fails.
	FailEvery int
	// Src is the randomness for Jitter (required when Jitter > 0).
	Src dp.Source

	mu                sync.Mutex
	writes, failures  int
	active, maxActive int
	messages          int
}

var _ message.Sink = (*SlowSink)(nil)

// Write delays, then writes through (or fails after a partial write).
func (s *SlowSink) Write(ctx context.Context, msgs []message.Message) error {
	s.mu.Lock()
	s.writes++
	n := s.writes
	s.active++
	s.maxActive = max(s.maxActive, s.active)
	d := s.Delay
	if s.Jitter > 0 {
		if s.Src == nil {
			s.active--
			s.mu.Unlock()
			return errors.New("slow sink: jitter needs a randomness source")
		}
		d += time.Duration(dp.Uint64n(s.Src, uint64(s.Jitter)))
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
	}()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("slow sink: %w", ctx.Err())
		case <-t.C:
		}
	}
	if s.FailEvery > 0 && n%s.FailEvery == 0 {
		half := len(msgs) / 2
		if half > 0 {
			if err := s.Sink.Write(ctx, msgs[:half]); err != nil {
				return fmt.Errorf("slow sink: %w", err)
			}
		}
		s.mu.Lock()
		s.failures++
		s.mu.Unlock()
		return fmt.Errorf("slow sink: write %d of %d messages, then: %w", half, len(msgs), ErrInjected)
	}
	if err := s.Sink.Write(ctx, msgs); err != nil {
		return fmt.Errorf("slow sink: %w", err)
	}
	s.mu.Lock()
	s.messages += len(msgs)
	s.mu.Unlock()
	return nil
}

// Close closes the wrapped sink.
func (s *SlowSink) Close() error { return s.Sink.Close() }

// Connect connects the wrapped sink.
func (s *SlowSink) Connect(ctx context.Context) error { return s.Sink.Connect(ctx) }

// SinkStats counts what a SlowSink saw.
type SinkStats struct {
	Writes, Failures int
	// Messages written by successful (not failed) writes.
	Messages int
	// MaxConcurrent is the most writes in progress at once.
	MaxConcurrent int
}

// Stats returns the counts so far.
func (s *SlowSink) Stats() SinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SinkStats{Writes: s.writes, Failures: s.failures, Messages: s.messages, MaxConcurrent: s.maxActive}
}

// TrackedSource wraps a source and counts what is in flight: batches (and
// their messages) returned by ReadBatch and not yet acknowledged. It also
// counts messages read per partition. Gate, when non-nil, holds the first
// ReadBatch until it is closed.
type TrackedSource struct {
	Source Source
	Gate   <-chan struct{}

	mu                      sync.Mutex
	batches, messages       int
	maxBatches, maxMessages int
	acked, ackedMessages    int
	perPartition            map[int]int
}

// ReadBatch reads through and wraps the batch's Ack.
func (s *TrackedSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	if s.Gate != nil {
		select {
		case <-s.Gate:
		case <-ctx.Done():
			return message.Batch{}, ctx.Err()
		}
	}
	b, err := s.Source.ReadBatch(ctx)
	if err != nil {
		return b, err
	}
	n := len(b.Messages)
	s.mu.Lock()
	s.batches++
	s.messages += n
	s.maxBatches = max(s.maxBatches, s.batches)
	s.maxMessages = max(s.maxMessages, s.messages)
	if s.perPartition == nil {
		s.perPartition = map[int]int{}
	}
	for _, m := range b.Messages {
		s.perPartition[m.Partition]++
	}
	s.mu.Unlock()
	ack := b.Ack
	var once sync.Once
	b.Ack = func(ctx context.Context) error {
		if err := ack(ctx); err != nil {
			return err
		}
		once.Do(func() {
			s.mu.Lock()
			s.batches--
			s.messages -= n
			s.acked++
			s.ackedMessages += n
			s.mu.Unlock()
		})
		return nil
	}
	return b, nil
}

// Close closes the wrapped source.
func (s *TrackedSource) Close() error { return s.Source.Close() }

// Connect connects the tracked source.
func (s *TrackedSource) Connect(ctx context.Context) error { return s.Source.Connect(ctx) }

// Unwrap returns the tracked source (the service's stall monitor finds the
// group reader through it).
func (s *TrackedSource) Unwrap() message.Source { return s.Source }

// SourceStats is a TrackedSource's counts.
type SourceStats struct {
	// InFlightBatches and InFlightMessages are read but not acknowledged
	// now; the Max fields are the most at any time.
	InFlightBatches, InFlightMessages       int
	MaxInFlightBatches, MaxInFlightMessages int
	AckedBatches, AckedMessages             int
	// PerPartition counts messages read from each partition (including
	// any read again after a rebalance).
	PerPartition map[int]int
}

// Stats returns the counts so far.
func (s *TrackedSource) Stats() SourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	pp := make(map[int]int, len(s.perPartition))
	for k, v := range s.perPartition {
		pp[k] = v
	}
	return SourceStats{InFlightBatches: s.batches, InFlightMessages: s.messages,
		MaxInFlightBatches: s.maxBatches, MaxInFlightMessages: s.maxMessages,
		AckedBatches: s.acked, AckedMessages: s.ackedMessages, PerPartition: pp}
}
