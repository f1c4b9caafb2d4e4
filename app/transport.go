package app

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// Role names what a source or sink of the service is for.
type Role int

// The roles of the service's sources and sinks.
const (
	// RoleInput is the sanitizing stream's consumer group (input.group_id)
	// on input.topic.
	RoleInput Role = iota
	// RoleAggregatorInput is the aggregators' consumer group
	// (input.group_id + "-agg") on input.topic.
	RoleAggregatorInput
	// RoleSanitized is output.sanitized_topic.
	RoleSanitized
	// RoleDeadLetter is output.dead_letter_topic.
	RoleDeadLetter
	// RoleFits is output.fit_topic (one JSON release per message).
	RoleFits
	// RoleCurves is the Arrow curve topic (output.fit_arrow_topic).
	RoleCurves
)

var roleNames = [...]string{"input", "aggregator input", "sanitized", "dead letter", "fits", "curves"}

func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return fmt.Sprintf("Role(%d)", int(r))
	}
	return roleNames[r]
}

// Transport opens the sources and sinks the service runs over. The
// service closes what it opens. KafkaTransport, the default, is what
// `dpsurv run` uses; a caller that needs to see or alter the traffic (the
// fault tests, the load test's latency probe) passes a KafkaTransport
// decorated per role. The run loops see only message.Source and
// message.Sink, so a decorator changes nothing else.
type Transport interface {
	// Source opens the source of role (RoleInput or RoleAggregatorInput).
	Source(ctx context.Context, role Role) (message.Source, error)
	// Sink opens the sink of role; maxMessageBytes bounds one message (0:
	// the sink's default).
	Sink(ctx context.Context, role Role, maxMessageBytes int) (message.Sink, error)
}

// KafkaTransport opens the service's sources and sinks on the Kafka
// cluster of Config.Kafka, with the topics and groups Config names.
type KafkaTransport struct {
	Config Config
	Log    *zap.Logger
}

var _ Transport = KafkaTransport{}

// Source implements Transport: a consumer group with manual commits
// (sources.Kafka). Both groups use the input's session: after a member's
// kill -9 the group moves its partitions when the session expires
// (without it, kafka-go's 30 s default).
func (k KafkaTransport) Source(_ context.Context, role Role) (message.Source, error) {
	c := k.Config
	group := c.Input.GroupID
	switch role {
	case RoleInput:
	case RoleAggregatorInput:
		group = c.AggregatorGroupID()
	default:
		return nil, fmt.Errorf("kafka transport: %v is not a source", role)
	}
	return sources.NewKafka(sources.KafkaConfig{Conn: c.Kafka, Topic: c.Input.Topic, GroupID: group, MaxBatch: c.Input.MaxBatch, IsolationLevel: c.Input.IsolationLevel,
		SessionTimeout: c.Input.SessionTimeout, HeartbeatInterval: c.Input.SessionTimeout / 3, RebalanceTimeout: c.Input.RebalanceTimeout}, k.logger())
}

// Sink implements Transport: a synchronous writer with acks=all
// (sinks.Kafka).
func (k KafkaTransport) Sink(_ context.Context, role Role, maxMessageBytes int) (message.Sink, error) {
	var topic string
	switch role {
	case RoleSanitized:
		topic = k.Config.Output.SanitizedTopic
	case RoleDeadLetter:
		topic = k.Config.Output.DeadLetterTopic
	case RoleFits:
		topic = k.Config.Output.FitTopic
	case RoleCurves:
		topic = k.Config.FitCurveTopic()
	default:
		return nil, fmt.Errorf("kafka transport: %v is not a sink", role)
	}
	return sinks.NewKafka(sinks.KafkaConfig{Conn: k.Config.Kafka, Topic: topic, BatchBytes: int64(maxMessageBytes)}, k.logger())
}

func (k KafkaTransport) logger() *zap.Logger {
	if k.Log == nil {
		return zap.NewNop()
	}
	return k.Log
}

// readerOf finds the input's group reader under any decorators: src
// itself, or what its Unwrap method returns (a decorator that wants the
// stall monitor to keep healing implements Unwrap). Nil if none.
func readerOf(src message.Source) readerRestarter {
	for src != nil {
		if r, ok := src.(readerRestarter); ok {
			return r
		}
		u, ok := src.(interface{ Unwrap() message.Source })
		if !ok {
			return nil
		}
		src = u.Unwrap()
	}
	return nil
}
