package cli

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd"
)

func runService(ctx context.Context, env Env, args []string) error {
	fs := newFlags("run", env)
	path := fs.String("config", "", "YAML config file (required)")
	dry := fs.Bool("dry-run", false, "check the config and the key, print the guarantees, and exit")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		fmt.Fprintln(env.Stderr, "dpsurv run: --config is required")
		return errUsage
	}
	cfg, key, g, err := servicecmd.Load(*path)
	if err != nil {
		return err
	}
	if *dry {
		return servicecmd.DryRun(env.Stdout, cfg, g)
	}
	log, level, err := servicecmd.NewLogger(env.Stderr, cfg.Log.Level)
	if err != nil {
		return err
	}
	defer log.Sync()
	svc := &app.Service{Config: cfg, Key: key, Log: log, LogLevel: &level}
	stop := servicecmd.ReloadOnHangup(ctx, svc, *path, log)
	defer stop()
	return svc.Run(ctx)
}

func runBroker(ctx context.Context, env Env, args []string) error {
	fs := newFlags("broker", env)
	listen := fs.String("listen", "127.0.0.1:9092", "address to listen on")
	dataDir := fs.String("data-dir", "", "persist topics and offsets here across restarts")
	partitions := fs.Int("partitions", 4, "partitions of auto-created topics")
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(env.Stderr, "info")
	if err != nil {
		return err
	}
	c, err := broker.Start(broker.Options{Listen: *listen, DataDir: *dataDir, Partitions: *partitions, Logger: log})
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	log.Info("embedded broker up", zap.Strings("addrs", c.Addrs()), zap.String("data_dir", *dataDir))
	fmt.Fprintf(env.Stdout, "broker listening on %v\n", c.Addrs())
	<-ctx.Done()
	return c.Close()
}
