package eval

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
)

type subcommand struct {
	usage string
	run   func(args []string, stdout, stderr io.Writer) error
}

var subcommands = map[string]subcommand{}

// newFlagSet is a subcommand's flag set: errors are returned, messages and
// -h's usage go to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseStudy registers the flags every study of a generated page has
// (-seed, -write), parses args (parseArgs) and returns the budgets listed
// in *eps, the text of the study's -eps flag.
func parseStudy(fs *flag.FlagSet, args []string, seed *uint64, write, eps *string) ([]float64, error) {
	fs.Uint64Var(seed, "seed", 1, "seed of dp.NewSeededSource (evaluation only)")
	fs.StringVar(write, "write", "", "replace this command's block in the markdown page instead of printing")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	return fitsFloatList(*eps, false)
}

// parseArgs parses a subcommand's flags and refuses positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// register adds a subcommand; called from init() in each subcommand's file.
func register(name, usage string, run func(args []string, stdout, stderr io.Writer) error) {
	if _, dup := subcommands[name]; dup {
		panic("dpsurv-eval: subcommand registered twice: " + name)
	}
	subcommands[name] = subcommand{usage: usage, run: run}
}

// Main runs the dpsurv-eval command line (args without the program name)
// and returns its exit code: 0 on success or -h, 1 when a subcommand fails,
// 2 on a usage error.
func Main(args []string, stdout, stderr io.Writer) int { return mainArgs(args, stdout, stderr) }

func mainArgs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dpsurv-eval: unknown subcommand %q\n", args[0])
		printUsage(stderr)
		return 2
	}
	if err := sc.run(args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "dpsurv-eval %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: dpsurv-eval <subcommand> [flags]")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-22s %s\n", n, subcommands[n].usage)
	}
}
