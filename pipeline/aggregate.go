package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
)

// DefaultAggregatorTick is how often the aggregators look at the clock to
// close windows and retry pending releases.
const DefaultAggregatorTick = 250 * time.Millisecond

// DefaultCheckpointInterval is how often the aggregators save a checkpoint
// and commit their input offsets when no window closes.
const DefaultCheckpointInterval = 5 * time.Second

// Aggregator is what AggregatorRunner feeds (aggregators.Feed in the
// service): a windowed state that checkpoints what it counted.
type Aggregator interface {
	// Consume counts one input message; a message the restored checkpoint
	// already counted must be skipped (a redelivery). An error ends the
	// run.
	Consume(msg message.Message) error
	// Tick closes and releases the windows due; saved reports whether it
	// saved a checkpoint.
	Tick(ctx context.Context) (saved bool, err error)
	// Checkpoint saves everything consumed so far.
	Checkpoint(ctx context.Context) error
	// Drain publishes the released windows not yet published.
	Drain(ctx context.Context) error
}

// AggregatorRunner feeds an Aggregator from the input topic in its own
// consumer group. Offsets are committed only after a checkpoint that
// covers them; messages the restored checkpoint already counted are
// skipped (Aggregator.Consume), so a lost commit never double-counts.
type AggregatorRunner struct {
	Source message.Source
	Engine Aggregator
	Log    *zap.Logger
	// Tick is how often windows are checked (default DefaultAggregatorTick);
	// CheckpointInterval how often a checkpoint is saved and offsets
	// committed when no window closes (default DefaultCheckpointInterval).
	Tick               time.Duration
	CheckpointInterval time.Duration
	// DrainTimeout bounds the final publication, checkpoint and commit
	// (default 10 s); the Tick in flight when the stop comes has up to half
	// of it to finish first.
	DrainTimeout time.Duration

	ready atomic.Bool
}

// Ready reports whether the runner is consuming.
func (r *AggregatorRunner) Ready() bool { return r.ready.Load() }

// Run consumes until ctx ends (then it saves a last checkpoint and commits,
// and returns nil) or the source fails (then it returns at once, without a
// checkpoint: like a crash, the restart resumes from the last one).
func (r *AggregatorRunner) Run(ctx context.Context) error {
	tick := orDuration(r.Tick, DefaultAggregatorTick)
	every := orDuration(r.CheckpointInterval, DefaultCheckpointInterval)
	drain := orDuration(r.DrainTimeout, 10*time.Second)
	log := r.Log
	if log == nil {
		log = zap.NewNop()
	}

	rctx, rcancel := context.WithCancel(ctx)
	batches := make(chan message.Batch)
	readErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := readLoop(rctx, r.Source, readHooks{
			failed: func(err error, wait time.Duration) {
				// Transient (a broker outage): the checkpoint covers what
				// was counted; read again after a pause.
				log.Warn("aggregator read failed; retrying", zap.Error(err), zap.Duration("backoff", wait))
			},
			send: func(b message.Batch) bool {
				return send(rctx, batches, b)
			},
		})
		if err != nil {
			readErr <- err
		}
	}()
	defer func() { rcancel(); wg.Wait() }()

	var acks []func(context.Context) error
	commit := func(ctx context.Context) {
		// The latest batch's commit implies the earlier ones per
		// partition; committing in reverse makes the rest no-ops.
		for _, ack := range slices.Backward(acks) {
			if err := ack(ctx); err != nil {
				log.Warn("aggregator offset commit failed (the checkpoint still covers them)", zap.Error(err))
				break
			}
		}
		acks = acks[:0]
	}
	// A stop does not cut short the Tick in flight: a ledger append
	// cancelled mid-way leaves its window charged or not, unknown until a
	// later holder reads the ledger, so the in-flight Tick keeps tctx until
	// it returns or half the drain time has passed since the stop. No Tick
	// starts after the stop.
	tctx, tcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer tcancel()
	stopGrace := context.AfterFunc(ctx, func() {
		grace := time.NewTimer(drain / 2)
		defer grace.Stop()
		select {
		case <-grace.C:
			tcancel()
		case <-tctx.Done():
		}
	})
	defer stopGrace()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	last := time.Now()
	r.ready.Store(true)
	defer r.ready.Store(false)
	// An immediate first tick registers the current windows and releases
	// what the restored checkpoint left pending.
	if _, err := r.Engine.Tick(tctx); err != nil {
		log.Warn("aggregator checkpoint failed; retrying", zap.Error(err))
	}
	for {
		select {
		case <-ctx.Done():
			rcancel()
			wg.Wait()
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
			defer cancel()
			// Every charged window reaches the fit topic before we stop
			// (a write the cancellation cut short is written again); what
			// cannot be is in the final checkpoint for the next holder.
			// Half the drain time at most: the checkpoint comes after.
			pctx, pcancel := context.WithTimeout(dctx, drain/2)
			defer pcancel()
			if err := r.Engine.Drain(pctx); err != nil {
				log.Warn("released windows left unpublished for the next holder", zap.Error(err))
			}
			if err := r.Engine.Checkpoint(dctx); err != nil {
				log.Error("final aggregator checkpoint failed", zap.Error(err))
				return nil
			}
			commit(dctx)
			log.Info("aggregators stopped after a final checkpoint")
			return nil
		case err := <-readErr:
			return fmt.Errorf("aggregators: read input: %w", err)
		case b := <-batches:
			if err := r.observe(b); err != nil {
				return err
			}
			acks = append(acks, b.Ack)
		case <-ticker.C:
			if ctx.Err() != nil {
				continue // stopping: the drain follows
			}
			saved, err := r.Engine.Tick(tctx)
			if err != nil {
				log.Warn("aggregator checkpoint failed; retrying", zap.Error(err))
				continue
			}
			if !saved && len(acks) > 0 && time.Since(last) >= every {
				if err := r.Engine.Checkpoint(tctx); err != nil {
					log.Warn("aggregator checkpoint failed; retrying", zap.Error(err))
					continue
				}
				saved = true
			}
			if saved {
				last = time.Now()
				commit(tctx)
			}
		}
	}
}

func (r *AggregatorRunner) observe(b message.Batch) error {
	for _, m := range b.Messages {
		if err := r.Engine.Consume(m); err != nil {
			return fmt.Errorf("aggregators: %w", err)
		}
	}
	return nil
}

func orDuration(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}
