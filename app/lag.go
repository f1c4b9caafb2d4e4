package app

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/pipeline"
)

// DefaultStallTimeout is the default input.stall_timeout.
const DefaultStallTimeout = 60 * time.Second

// lagMonitor compares the input group's committed offsets with the end
// offsets of every input partition, assigned or not: consumer lag then
// counts partitions no member consumes, and a partition whose lag stays
// positive while its committed offset does not move for the stall timeout
// is stalled (the service reports not ready). It sees every replica's
// partitions, so a stall on another replica shows here too.
//
// With a reader set, it also heals: when a stalled partition is held by
// this replica's group member (per the coordinator's description of the
// group), by no member of a stable group, or by another member while this
// replica is elected to act (see healDecision), and the stream itself is
// healthy, it restarts the reader, which leaves and rejoins the group and
// resumes from the committed offsets; at most once per stall timeout.
type lagMonitor struct {
	conn         kafkaconn.Config
	group, topic string
	metrics      *pipeline.Metrics
	log          *zap.Logger
	stallAfter   time.Duration
	interval     time.Duration
	now          func() time.Time // the stall timeout's clock

	// reader is the input's group reader (nil: report only); healthy
	// reports whether the stream's own stages work (a sink outage stops
	// commits on every partition, and a rejoin would not help).
	reader      readerRestarter
	healthy     func() bool
	lastRestart time.Time

	mu        sync.Mutex
	committed map[int]int64     // partition -> committed offset last seen
	since     map[int]time.Time // partition -> when it last moved or had no lag
	stalled   atomic.Int64
}

// readerRestarter is what the monitor needs of the input source
// (sources.Kafka).
type readerRestarter interface {
	MemberID() string
	Restart() error
}

func newLagMonitor(cfg Config, m *pipeline.Metrics, log *zap.Logger) *lagMonitor {
	stall := cfg.Input.StallTimeout
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	return &lagMonitor{conn: cfg.Kafka, group: cfg.Input.GroupID, topic: cfg.Input.Topic, metrics: m, log: log,
		stallAfter: stall, interval: min(5*time.Second, max(stall/4, 100*time.Millisecond)), now: time.Now,
		committed: map[int]int64{}, since: map[int]time.Time{}}
}

// Stalled is the number of stalled partitions at the last check.
func (l *lagMonitor) Stalled() int64 { return l.stalled.Load() }

func (l *lagMonitor) run(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		l.check(ctx, l.now())
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
	l.mu.Unlock()
	if len(stalled) > 0 {
		l.heal(cctx, now, stalled)
	}
}

// heal restarts the reader when a stalled partition is this replica's, or
// nobody's, or held by another member while this replica is the one
// elected to act (the lowest member id among the members holding no
// stalled partition): a dead member the coordinator failed to expire
// (kfake keeps a member whose JoinGroup response it could not deliver,
// with no session timer) cannot heal itself, and any rejoin makes the
// coordinator rebalance and drop the members that do not rejoin.
func (l *lagMonitor) heal(ctx context.Context, now time.Time, stalled []int) {
	if l.reader == nil || (l.healthy != nil && !l.healthy()) || (!l.lastRestart.IsZero() && now.Sub(l.lastRestart) < l.stallAfter) {
		return
	}
	me := l.reader.MemberID()
	owners, state, err := kafkaconn.GroupOwners(ctx, l.conn, l.group, l.topic)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Debug("group description unavailable", zap.Error(err))
		}
		return
	}
	if state != "Stable" || me == "" {
		return // a rebalance is under way and may resolve the stall
	}
	if _, member := owners.Members[me]; !member {
		return // this reader is not (yet) in the group
	}
	mine, nobodys, others, act := healDecision(me, owners, stalled)
	if !act {
		return
	}
	l.lastRestart = now
	l.metrics.ReaderRestarts.Inc()
	l.log.Warn("input partitions stalled: restarting the reader to rejoin the group (the coordinator then rebalances and drops members that do not rejoin)",
		zap.Ints("assigned_here", mine), zap.Ints("unassigned", nobodys), zap.Ints("held_by_other_members", others),
		zap.String("member", me), zap.Duration("stall_timeout", l.stallAfter))
	if err := l.reader.Restart(); err != nil {
		l.log.Warn("reader restart failed", zap.Error(err))
	}
}

// healDecision sorts the stalled partitions by holder — this member (me),
// no member, other members — and says whether this member restarts its
// reader: when it holds one, when nobody holds one, or when it is the
// lowest member id among the members holding no stalled partition.
func healDecision(me string, owners kafkaconn.Owners, stalled []int) (mine, nobodys, others []int, act bool) {
	holders := map[string]bool{}
	for _, p := range stalled {
		switch o, ok := owners.Partitions[p]; {
		case !ok:
			nobodys = append(nobodys, p)
		case o == me:
			mine = append(mine, p)
		default:
			others = append(others, p)
			holders[o] = true
		}
	}
	elected := ""
	for m := range owners.Members {
		if !holders[m] && (elected == "" || m < elected) {
			elected = m
		}
	}
	act = len(mine) > 0 || len(nobodys) > 0 || (len(others) > 0 && elected == me)
	return mine, nobodys, others, act
}
