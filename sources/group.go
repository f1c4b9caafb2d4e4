package sources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/retry"
)

// fetchTimeout bounds one fetch round trip beyond the broker's wait.
const fetchTimeout = 15 * time.Second

// partitionFetchBytes bounds one partition's share of a fetch (Kafka's
// max.partition.fetch.bytes default): a fetcher holds at most one response
// and one decoded chunk, so the source's prefetch is about 2 MiB per
// assigned partition. The broker still returns a first record batch larger
// than this whole (KIP-74), up to FetchMaxBytes.
const partitionFetchBytes = 1 << 20

// reportAfter is how many consecutive failed fetches of a partition make
// ReadBatch return the error (the fetcher keeps retrying either way).
const reportAfter = 3

// chunk is what one fetch of one partition yields for ReadBatch.
type chunk struct {
	version int64 // the generation the fetch belongs to (Kafka.versions)
	part    int
	msgs    []message.Message
	// next is the offset after everything the fetch held (delivered,
	// aborted or control).
	next int64
}

// groupReader is one consumer-group membership: kafka-go's ConsumerGroup
// (join, sync, heartbeats, commits) plus one fetcher per assigned
// partition speaking the Fetch API through kafka-go's protocol package, so
// that transactions are handled here (decodeCommitted) rather than by
// kafka-go's Reader, which surfaces aborted and control records.
type groupReader struct {
	k      *Kafka
	cg     *kafka.ConsumerGroup
	chunks chan chunk
	errs   chan error // the latest unreported error (capacity 1)
	cancel context.CancelFunc
	done   chan struct{}

	gen     atomic.Pointer[kafka.Generation]
	version atomic.Int64 // Kafka.versions value of gen (0 before the first)
	member  atomic.Pointer[string]

	commitMu sync.Mutex // one commit at a time on the coordinator conn
}

func (k *Kafka) newReader() (*groupReader, error) {
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                    k.group,
		Brokers:               k.conn.Brokers,
		Dialer:                k.dialer,
		Topics:                []string{k.topic},
		HeartbeatInterval:     k.timing.heartbeat,
		SessionTimeout:        k.timing.session,
		RebalanceTimeout:      k.timing.rebalance,
		JoinGroupBackoff:      time.Second,
		WatchPartitionChanges: true,
		StartOffset:           k.start,
		Logger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Debug(fmt.Sprintf(msg, args...))
		}),
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Warn(fmt.Sprintf(msg, args...))
		}),
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &groupReader{k: k, cg: cg, chunks: make(chan chunk, 1), errs: make(chan error, 1), cancel: cancel, done: make(chan struct{})}
	go g.run(ctx)
	return g, nil
}

// report makes err the error the next ReadBatch returns (replacing an
// unread older one).
func (g *groupReader) report(err error) {
	for {
		select {
		case g.errs <- err:
			return
		default:
			select {
			case <-g.errs:
			default:
			}
		}
	}
}

func (g *groupReader) run(ctx context.Context) {
	defer close(g.done)
	failures := 0
	for {
		gen, err := g.cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return
			}
			// The group backs off by itself (JoinGroupBackoff). A
			// rebalance under way fails a join or sync now and then:
			// report only persistent failures, as kafka-go's Reader does
			// (its MaxAttempts, 3).
			if failures++; failures >= reportAfter {
				g.report(err)
			}
			continue
		}
		failures = 0
		v := g.k.versions.Add(1)
		g.gen.Store(gen)
		g.version.Store(v)
		id := gen.MemberID
		g.member.Store(&id)
		g.k.newGeneration(v)
		g.k.log.Info("joined the consumer group", zap.String("member", gen.MemberID), zap.Int32("generation", gen.ID),
			zap.Int("partitions", len(gen.Assignments[g.k.topic])))
		for _, a := range gen.Assignments[g.k.topic] {
			part, offset := a.ID, a.Offset
			gen.Start(func(gctx context.Context) { g.fetch(gctx, v, part, offset) })
		}
		// Between generations Ack waits for the next one rather than
		// commit in an ended one.
		gen.Start(func(gctx context.Context) {
			<-gctx.Done()
			g.gen.CompareAndSwap(gen, nil)
		})
	}
}

// close leaves the group and waits for the fetchers.
func (g *groupReader) close() error {
	g.cancel()
	err := g.cg.Close()
	<-g.done
	return err
}

// commit commits next offsets (partition -> offset) in the current
// generation.
func (g *groupReader) commit(offsets map[int]int64) error {
	gen := g.gen.Load()
	if gen == nil {
		return errors.New("not a member of the group yet")
	}
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	return gen.CommitOffsets(map[string]map[int]int64{g.k.topic: offsets})
}

// fetch reads one partition from offset (or the start policy's offset when
// the group has none) until the generation ends.
func (g *groupReader) fetch(ctx context.Context, version int64, part int, offset int64) {
	k := g.k
	log := k.log.With(zap.Int("partition", part))
	// tr is the fetcher's own Transport (its own connections and metadata
	// cache); it is replaced after every failure, which also refreshes the
	// partition's leader.
	var tr *kafka.Transport
	dropTransport := func() {
		if tr != nil {
			tr.CloseIdleConnections()
			tr = nil
		}
	}
	defer dropTransport()
	bo := retry.New(100*time.Millisecond, 5*time.Second)
	failures := 0
	// fail reports err (from the reportAfter-th failure in a row on), then
	// waits; false when the generation ended meanwhile. A fetcher returns
	// only when the generation ends: kafka-go ends a generation when any
	// function it started returns.
	fail := func(err error) bool {
		failures++
		if failures >= reportAfter {
			g.report(fmt.Errorf("partition %d: %w", part, err))
		}
		log.Debug("fetch failed; retrying", zap.Error(err), zap.Duration("backoff", bo.Current()))
		dropTransport()
		return bo.Wait(ctx)
	}
	addr := kafka.TCP(k.conn.Brokers...)
	for ctx.Err() == nil {
		if tr == nil {
			t, err := k.conn.Transport()
			if err != nil {
				if !fail(err) {
					return
				}
				continue
			}
			tr = t
		}
		if offset < 0 { // kafka.FirstOffset or kafka.LastOffset: no committed offset
			o, err := k.listOffset(ctx, tr, addr, part, offset)
			if err != nil {
				if !fail(fmt.Errorf("list offsets: %w", err)) {
					return
				}
				continue
			}
			offset = o
		}
		req := &fetchAPI.Request{
			ReplicaID:      -1,
			MaxWaitTime:    int32(k.fetchWait / time.Millisecond),
			MinBytes:       1,
			MaxBytes:       int32(k.fetchBytes),
			IsolationLevel: int8(k.isolation),
			SessionID:      0,
			SessionEpoch:   -1, // no fetch session: every fetch is a full fetch
			Topics: []fetchAPI.RequestTopic{{Topic: k.topic, Partitions: []fetchAPI.RequestPartition{{
				Partition: int32(part), CurrentLeaderEpoch: -1, FetchOffset: offset, LogStartOffset: -1,
				PartitionMaxBytes: int32(min(k.fetchBytes, partitionFetchBytes))}}}},
		}
		fctx, cancel := context.WithTimeout(ctx, k.fetchWait+fetchTimeout)
		began := time.Now()
		m, err := tr.RoundTrip(fctx, addr, req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !fail(fmt.Errorf("fetch: %w", err)) {
				return
			}
			continue
		}
		p, err := findPartition(m, k.topic, part)
		if err == nil && p.ErrorCode != 0 {
			err = kafka.Error(p.ErrorCode)
		}
		if errors.Is(err, kafka.OffsetOutOfRange) {
			log.Warn("fetch offset out of range; resetting by input start offset", zap.Int64("offset", offset))
			offset = k.start
			continue
		}
		if err != nil {
			if !fail(fmt.Errorf("fetch: %w", err)) {
				return
			}
			continue
		}
		d, err := decodeCommitted(p, k.topic, offset, k.isolation == kafka.ReadCommitted)
		if err != nil && len(d.msgs) == 0 && d.next == offset {
			if !fail(err) {
				return
			}
			continue
		}
		failures = 0
		bo.Reset()
		if d.abortedRecords > 0 || d.controlRecords > 0 {
			k.skipped(d.abortedRecords, d.controlRecords)
			log.Debug("skipped transactional records", zap.Int("aborted", d.abortedRecords), zap.Int("control", d.controlRecords))
		}
		end := p.HighWatermark
		if k.isolation == kafka.ReadCommitted && p.LastStableOffset >= 0 {
			end = p.LastStableOffset
		}
		k.observe(version, part, offset, end, p.HighWatermark)
		if len(d.msgs) == 0 && d.next == offset {
			// The broker waited MaxWait for nothing; should it answer
			// at once instead, do not spin.
			if time.Since(began) < k.fetchWait/2 && !sleepCtx(ctx, min(k.fetchWait, 100*time.Millisecond)) {
				return
			}
			continue
		}
		select {
		case g.chunks <- chunk{version: version, part: part, msgs: d.msgs, next: d.next}:
		case <-ctx.Done():
			return
		}
		offset = d.next
	}
}

// sleepCtx sleeps d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// findPartition returns the response's partition part of topic.
func findPartition(m kafka.Response, topic string, part int) (*fetchAPI.ResponsePartition, error) {
	res, ok := m.(*fetchAPI.Response)
	if !ok {
		return nil, fmt.Errorf("fetch: unexpected response %T", m)
	}
	if res.ErrorCode != 0 {
		return nil, kafka.Error(res.ErrorCode)
	}
	for i := range res.Topics {
		if res.Topics[i].Topic != topic {
			continue
		}
		for j := range res.Topics[i].Partitions {
			if p := &res.Topics[i].Partitions[j]; int(p.Partition) == part {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("fetch: partition %d of %s missing from the response", part, topic)
}

// listOffset resolves kafka.FirstOffset or kafka.LastOffset (under the
// source's isolation level: the last stable offset for read_committed).
func (k *Kafka) listOffset(ctx context.Context, tr *kafka.Transport, addr net.Addr, part int, which int64) (int64, error) {
	cl := &kafka.Client{Addr: addr, Transport: tr, Timeout: fetchTimeout}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req := kafka.FirstOffsetOf(part)
	if which == kafka.LastOffset {
		req = kafka.LastOffsetOf(part)
	}
	res, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{k.topic: {req}},
		IsolationLevel: k.isolation})
	if err != nil {
		return 0, err
	}
	for _, po := range res.Topics[k.topic] {
		if po.Partition != part {
			continue
		}
		if po.Error != nil {
			return 0, po.Error
		}
		if which == kafka.LastOffset {
			return po.LastOffset, nil
		}
		return po.FirstOffset, nil
	}
	return 0, fmt.Errorf("partition %d missing from the response", part)
}
