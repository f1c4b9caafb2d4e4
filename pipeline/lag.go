package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
)

// DefaultStallTimeout is the default input.stall_timeout.
const DefaultStallTimeout = 60 * time.Second

// lagMonitor compares the input group's committed offsets with the end
// offsets of every input partition, assigned or not: consumer lag then
// counts partitions no member consumes, and a partition whose lag stays
// positive while its committed offset does not move for the stall timeout
// is stalled (the service reports not ready). It sees every replica's
// partitions, so a stall on another replica shows here too.
type lagMonitor struct {
	conn         kafkaconn.Config
	group, topic string
	metrics      *Metrics
	log          *zap.Logger
	stallAfter   time.Duration
	interval     time.Duration

	mu        sync.Mutex
	committed map[int]int64     // partition -> committed offset last seen
	since     map[int]time.Time // partition -> when it last moved or had no lag
	stalled   atomic.Int64
}

func newLagMonitor(cfg Config, m *Metrics, log *zap.Logger) *lagMonitor {
	stall := cfg.Input.StallTimeout
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	return &lagMonitor{conn: cfg.Kafka, group: cfg.Input.GroupID, topic: cfg.Input.Topic, metrics: m, log: log,
		stallAfter: stall, interval: min(5*time.Second, max(stall/4, 100*time.Millisecond)),
		committed: map[int]int64{}, since: map[int]time.Time{}}
}

// Stalled is the number of stalled partitions at the last check.
func (l *lagMonitor) Stalled() int64 { return l.stalled.Load() }

func (l *lagMonitor) run(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		l.check(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *lagMonitor) check(ctx context.Context, now time.Time) {
	cctx, cancel := context.WithTimeout(ctx, max(l.interval, 2*time.Second))
	defer cancel()
	parts, err := kafkaconn.GroupLag(cctx, l.conn, l.group, l.topic)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Debug("group lag unavailable", zap.Error(err))
		}
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var total int64
	var stalled []int
	for _, p := range parts {
		total += p.Lag()
		prev, seen := l.committed[p.Partition]
		if !seen || prev != p.Committed || p.Lag() == 0 {
			l.since[p.Partition] = now
		}
		l.committed[p.Partition] = p.Committed
		if p.Lag() > 0 && now.Sub(l.since[p.Partition]) >= l.stallAfter {
			stalled = append(stalled, p.Partition)
		}
	}
	l.metrics.ConsumerLag.Set(float64(total))
	l.metrics.StalledPartitions.Set(float64(len(stalled)))
	if old := l.stalled.Swap(int64(len(stalled))); len(stalled) > 0 && old == 0 {
		l.log.Warn("input partitions stalled: lag and no commit within input.stall_timeout; not ready",
			zap.Ints("partitions", stalled), zap.Duration("stall_timeout", l.stallAfter), zap.Int64("group_lag", total))
	}
}
