package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/buildinfo"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd"
)

// Env is what a subcommand gets from the process.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
}

type command struct {
	name  string
	usage string
	run   func(ctx context.Context, env Env, args []string) error
}

func commands() []command {
	return []command{
		{"demo", "run the default pipeline on the embedded broker with a synthetic cohort", runDemo},
		{"run", "the service: dpsurv run --config FILE [--dry-run]", runService},
		{"statement", "what one patient can lose across every output: --config FILE | --chart-values FILE... [--json]", runStatement},
		{"broker", "the embedded Kafka-protocol broker: --listen 127.0.0.1:9092 [--data-dir DIR]", runBroker},
		{"sanitize", "per-record mechanisms on a file: --input F --output G [mechanism flags]", runSanitize},
		{"fit", "one fit on a file: fit km|weibull|discrete|cox --input F --epsilon E|inf", runFit},
		{"plot", "draw a saved km fit (fit km JSON or fit-topic messages): --input F --output FIG.png|svg", runPlot},
		{"audit", "attack precision and utility: --original F --sanitized G [--json]", runAudit},
		{"gen", "synthetic time-to-event data: --n N --output F", runGen},
		{"bench", "stream throughput against a passthrough on the embedded broker [--json]", runBench},
		{"version", "the release version, source revision and Go toolchain of this binary [--json]", runVersion},
		{"loadtest", "sustained load on the embedded broker: --rate R --duration D --replicas N | --max-rate --records R [--json]", runLoadtest},
	}
}

// errUsage marks errors already explained by a usage message.
var errUsage = errors.New("usage")

// Main runs the dpsurv command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	env := Env{Stdout: stdout, Stderr: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		fmt.Fprintln(stdout, buildinfo.Get())
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err := c.run(ctx, env, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintf(stderr, "dpsurv %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "dpsurv: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dpsurv <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.usage)
	}
	fmt.Fprintln(w, "\nRun 'dpsurv <command> -h' for a command's flags.")
}

func newFlags(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet("dpsurv "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	return nil
}

// newLogger logs JSON to stderr at the given level. Log lines never carry
// record values; see the log-scan test of the end-to-end run.
func newLogger(w io.Writer, level string) (*zap.Logger, error) {
	log, _, err := servicecmd.NewLogger(w, level)
	return log, err
}

func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
