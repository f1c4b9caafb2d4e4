package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/retry"
)

// Delays between failed source reads.
const (
	readBackoffMin = 100 * time.Millisecond
	readBackoffMax = 5 * time.Second
)

// readHooks are what a run loop does around readLoop's reads; nil hooks
// are skipped.
type readHooks struct {
	// failed is called after a transient read error, before waiting wait.
	failed func(err error, wait time.Duration)
	// recovered is called on the first successful read after failures.
	recovered func()
	// send hands a batch on; false stops the loop (the consumer is gone).
	send func(b message.Batch) bool
}

// readLoop connects src, then reads batches from it and sends them on
// until ctx ends or send refuses one (it returns nil), or a connect or read
// error ends the run (endsRun: it returns that error). Any other error is
// transient: nothing was acknowledged, so it waits with exponential
// backoff and tries again; after a read error marked
// message.ErrNotConnected it connects again before the next read.
func readLoop(ctx context.Context, src message.Source, h readHooks) error {
	bo := retry.New(readBackoffMin, readBackoffMax)
	failing, connected := false, false
	for {
		var b message.Batch
		err := error(nil)
		if !connected {
			if err = src.Connect(ctx); err == nil {
				connected = true
			} else {
				err = fmt.Errorf("connect: %w", err)
			}
		}
		if connected {
			b, err = src.ReadBatch(ctx)
			if errors.Is(err, message.ErrNotConnected) {
				connected = false
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if endsRun(err) {
				return err
			}
			failing = true
			if h.failed != nil {
				h.failed(err, bo.Current())
			}
			if !bo.Wait(ctx) {
				return nil
			}
			continue
		}
		bo.Reset()
		if failing {
			failing = false
			if h.recovered != nil {
				h.recovered()
			}
		}
		if !h.send(b) {
			return nil
		}
	}
}

// send hands v to ch unless ctx ends first: false when it did not (the
// run is stopping).
func send[T any](ctx context.Context, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	}
}
