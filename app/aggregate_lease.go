package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/retry"
)

// LeaseTopic is the single-partition topic whose consumer group elects the
// one process that runs the aggregators (Kafka-ledger mode).
func (c Config) LeaseTopic() string { return c.Ledger.Topic + ".lease" }

// LeaseGroupID is the consumer group of the aggregator lease.
func (c Config) LeaseGroupID() string { return c.Input.GroupID + "-agg-lease" }

// leaseTimings are the lease group's timings (tests shorten them).
type leaseTimings struct {
	heartbeat, session, rebalance time.Duration
}

var defaultLeaseTimings = leaseTimings{heartbeat: time.Second, session: DefaultLeaseSessionTimeout, rebalance: 30 * time.Second}

// leaseTimingsFor is the default timings with ledger.lease_session_timeout.
func leaseTimingsFor(cfg Config) leaseTimings {
	tm := defaultLeaseTimings
	tm.session = cfg.LeaseSessionTimeout()
	return tm
}

// runWithLease runs fn only while this process holds the aggregator lease:
// partition 0 of the single-partition lease topic, assigned by the broker to
// exactly one member of the lease group per generation. Every replica of the
// service joins the group; the others wait as standbys. When the generation
// ends (a member joins or leaves, or this one loses its session) fn's
// context is cancelled and the group does not move on before fn has
// returned — after its final checkpoint — so the next holder starts from
// that checkpoint and the ledger has one writer. The assignment is sticky:
// the current holder keeps the lease when a standby joins.
//
// fn's error ends runWithLease (a crash); a nil return from a cancelled
// generation waits for the next one.
func runWithLease(ctx context.Context, cfg Config, log *zap.Logger, leader *atomic.Bool, tm leaseTimings,
	fn func(context.Context) error) error {
	topic := cfg.LeaseTopic()
	bo := retry.New(500*time.Millisecond, 30*time.Second)
	for {
		err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{topic: 1}, nil)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		// Not ready (no lease): the stream goes on sanitizing meanwhile.
		log.Error("aggregator lease topic unavailable; retrying", zap.Error(err), zap.Duration("backoff", bo.Current()))
		if !bo.Wait(ctx) {
			return nil
		}
	}
	d, err := cfg.Kafka.Dialer()
	if err != nil {
		return fmt.Errorf("aggregator lease: %w", err)
	}
	bal := &stickyLease{}
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID: cfg.LeaseGroupID(), Brokers: cfg.Kafka.Brokers, Dialer: d, Topics: []string{topic},
		GroupBalancers:    []kafka.GroupBalancer{bal},
		HeartbeatInterval: tm.heartbeat, SessionTimeout: tm.session, RebalanceTimeout: tm.rebalance,
		JoinGroupBackoff: time.Second,
		Logger:           kafka.LoggerFunc(func(msg string, args ...any) { log.Debug(fmt.Sprintf(msg, args...)) }),
		ErrorLogger:      kafka.LoggerFunc(func(msg string, args ...any) { log.Warn(fmt.Sprintf(msg, args...)) }),
	})
	if err != nil {
		return fmt.Errorf("aggregator lease: %w", err)
	}
	defer cg.Close()
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			cerr := kafkaconn.Classify(err)
			if errors.Is(err, kafka.ErrGroupClosed) {
				return fmt.Errorf("aggregator lease: %w", cerr)
			}
			leader.Store(false)
			if errors.Is(cerr, kafkaconn.ErrAuth) || errors.Is(cerr, kafkaconn.ErrTLS) {
				// Refused credentials: alive, sanitizing nothing new
				// (the stream fails the same way), retrying with backoff.
				log.Error("aggregator lease: kafka refused the connection; retrying", zap.Error(cerr), zap.Duration("backoff", bo.Current()))
				if !bo.Wait(ctx) {
					return nil
				}
				continue
			}
			bo.Reset()
			// Rebalances, coordinator moves and the like are transient:
			// the group keeps rejoining by itself; wait and ask again.
			log.Warn("aggregator lease: group error, retrying", zap.Error(cerr))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(tm.heartbeat):
			}
			continue
		}
		if len(gen.Assignments[topic]) == 0 {
			bal.held.Store(false)
			leader.Store(false)
			log.Info("aggregators on standby: another replica holds the lease", zap.String("group", cfg.LeaseGroupID()))
			continue // Next returns once this generation has ended
		}
		bal.held.Store(true)
		leader.Store(true)
		log.Info("aggregator lease acquired", zap.Int32("generation", gen.ID))
		errc := make(chan error, 1)
		gen.Start(func(gctx context.Context) {
			// fn stops when the generation ends or ctx does.
			fctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(gctx, cancel)
			defer stop()
			defer cancel()
			errc <- fn(fctx)
		})
		err = <-errc
		leader.Store(false)
		if err != nil {
			bal.held.Store(false)
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Info("aggregator lease generation ended; rejoining")
	}
}

// stickyLease assigns the lease partition to the member that held it (it
// says so in its join metadata), else to the first member by id.
type stickyLease struct{ held atomic.Bool }

func (*stickyLease) ProtocolName() string { return "dpsurv-sticky-lease" }

func (s *stickyLease) UserData() ([]byte, error) {
	if s.held.Load() {
		return []byte("holder"), nil
	}
	return []byte{}, nil
}

func (*stickyLease) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	out := kafka.GroupMemberAssignments{}
	if len(members) == 0 {
		return out
	}
	ms := append([]kafka.GroupMember(nil), members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	winner := ms[0]
	for _, m := range ms {
		if string(m.UserData) == "holder" {
			winner = m
			break
		}
	}
	for _, m := range ms {
		out[m.ID] = map[string][]int{}
	}
	for _, p := range partitions {
		out[winner.ID][p.Topic] = append(out[winner.ID][p.Topic], p.ID)
	}
	return out
}
