// Package servicecmd is `dpsurv run` and `dpsurv version` without the rest
// of the command line: the slim service binary (cmd/dpsurv-service) links
// only the service, not the embedded broker, the plotting stack or the
// batch fits. It also holds what both binaries share: the SIGHUP reload.
package servicecmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/buildinfo"
)

// Main runs the slim command line and returns the exit code: `run --config
// FILE [--dry-run]` (as `dpsurv run`), `version [--json]`, `--version`.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "--version", "-version":
		fmt.Fprintln(stdout, buildinfo.Get())
		return 0
	case "version":
		fs := flag.NewFlagSet("dpsurv version", flag.ContinueOnError)
		fs.SetOutput(stderr)
		asJSON := fs.Bool("json", false, "print {\"version\",\"revision\",\"goversion\"} as JSON")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if *asJSON {
			b, _ := json.MarshalIndent(buildinfo.Get(), "", "  ")
			fmt.Fprintln(stdout, string(b))
			return 0
		}
		fmt.Fprintln(stdout, buildinfo.Get())
		return 0
	case "run":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		switch err := Run(ctx, args[1:], stdout, stderr); {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintf(stderr, "dpsurv run: %v\n", err)
			return 1
		}
	default:
		fmt.Fprintf(stderr, "dpsurv: %q is not in the service binary\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dpsurv run --config FILE [--dry-run] | dpsurv version [--json] | dpsurv --version")
	fmt.Fprintln(w, "(the service image's binary; the full dpsurv binary has every command)")
}

var errUsage = errors.New("usage")

// Run is `dpsurv run`: load and check the config, the key and the Kafka
// files (Load), print the guarantees and the statement with --dry-run
// (DryRun), else run the service until ctx ends, reloading on SIGHUP.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dpsurv run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "YAML config file (required)")
	dry := fs.Bool("dry-run", false, "check the config and the key, print the guarantees, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if *path == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "dpsurv run: --config FILE is required, and nothing else")
		return errUsage
	}
	cfg, key, g, err := Load(*path)
	if err != nil {
		return err
	}
	if *dry {
		return DryRun(stdout, cfg, g)
	}
	log, lvl, err := NewLogger(stderr, cfg.Log.Level)
	if err != nil {
		return err
	}
	defer log.Sync()
	svc := &app.Service{Config: cfg, Key: key, Log: log, LogLevel: &lvl}
	stop := ReloadOnHangup(ctx, svc, *path, log)
	defer stop()
	return svc.Run(ctx)
}
