package cli

import (
	"context"
	"errors"
)

func runFit(ctx context.Context, env Env, args []string) error {
	return errors.New("fit is not wired into this build yet")
}

func runAudit(ctx context.Context, env Env, args []string) error {
	return errors.New("audit is not wired into this build yet")
}
