package pipeline

import (
	"context"
	"time"

	"github.com/dpsurv/dpsurv/internal/retry"
	"github.com/dpsurv/dpsurv/message"
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

// readLoop reads batches from src and sends them on until ctx ends or send
// refuses one (it returns nil), or a read error ends the run (endsRun: it
// returns that error). Any other read error is transient: nothing was
// acknowledged, so it waits with exponential backoff and reads again.
func readLoop(ctx context.Context, src Source, h readHooks) error {
	bo := retry.New(readBackoffMin, readBackoffMax)
	failing := false
	for {
		b, err := src.ReadBatch(ctx)
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
