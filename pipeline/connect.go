package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/retry"
)

// Delays between failed sink connects.
const (
	connectBackoffMin = 100 * time.Millisecond
	connectBackoffMax = 5 * time.Second
)

// Connect connects c, retrying with backoff while it fails (each failure
// is logged with what), until it succeeds (nil), ctx ends (ctx.Err()) or
// an error marked message.ErrFatal (returned). The stream connects its
// sinks with it; the app its fit sinks.
func Connect(ctx context.Context, log *zap.Logger, what string, c interface{ Connect(context.Context) error }) error {
	bo := retry.New(connectBackoffMin, connectBackoffMax)
	for {
		err := c.Connect(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, message.ErrFatal) {
			return fmt.Errorf("connect %s: %w", what, err)
		}
		if log != nil {
			log.Warn("connect failed; retrying", zap.String("what", what), zap.Error(err), zap.Duration("backoff", bo.Current()))
		}
		if !bo.Wait(ctx) {
			return ctx.Err()
		}
	}
}

// connectSinks connects the stream's sinks (in the order of their route
// names), before its source (which readLoop connects). It returns nil once
// all are connected or when ctx ends first (a shutdown while connecting is
// clean).
func (s *Stream) connectSinks(ctx context.Context) error {
	for _, route := range s.routeNames() {
		if err := Connect(ctx, s.Log, route+" sink", s.Routes[route]); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	return nil
}
