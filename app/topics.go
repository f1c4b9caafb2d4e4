package app

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/retry"
)

// ensureTopics is kafkaconn.EnsureTopics retried, with backoff, while the
// topics are missing and the broker will not create them (it lacks the
// CreateTopics API, as librdkafka's mock cluster, or refuses it): the
// service stays alive and not ready, and says which topics it needs, until
// an operator creates them. Any other error is returned. It returns nil
// when ctx ends first (the service is stopping). bo spaces the retries.
func ensureTopics(ctx context.Context, log *zap.Logger, conn kafkaconn.Config, topics map[string]int, bo *retry.Backoff) error {
	for {
		err := kafkaconn.EnsureTopics(ctx, conn, topics, nil)
		var missing *kafkaconn.MissingTopicsError
		if !errors.As(err, &missing) {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		log.Error("kafka topics missing and the broker will not create them; not ready, retrying until they exist",
			zap.Strings("create_topics", missing.Topics), zap.NamedError("cause", missing.Err), zap.Duration("backoff", bo.Current()))
		if !bo.Wait(ctx) {
			return nil
		}
	}
}
