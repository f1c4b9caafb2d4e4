package ops

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sources"
)

// FollowTopic reads topic in consumer group group (batches of up to 256
// messages) until ctx ends, then returns nil. It hands every message to f
// with the time its batch was read, then commits the batch. A read or commit
// error while ctx is live ends it with that error. The load test's
// consumer and ops/windowsrun's probes both measure latency with it. log
// may be nil.
func FollowTopic(ctx context.Context, conn kafkaconn.Config, topic, group string, log *zap.Logger, f func(m message.Message, now time.Time)) error {
	src, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: topic, GroupID: group, MaxBatch: 256}, log)
	if err != nil {
		return err
	}
	defer src.Close()
	for {
		b, err := src.ReadBatch(ctx)
		if err != nil && ctx.Err() != nil {
			return nil // the end, not a failure
		}
		if err != nil {
			return fmt.Errorf("read topic %s: %w", topic, err)
		}
		now := time.Now()
		for _, m := range b.Messages {
			f(m, now)
		}
		if err := b.Ack(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("commit topic %s: %w", topic, err)
		}
	}
}
