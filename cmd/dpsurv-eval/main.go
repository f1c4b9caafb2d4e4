// Command dpsurv-eval regenerates the evaluation tables and figures of
// docs/evaluation.md from the repository's datasets, deterministically
// (every random draw comes from dp.NewSeededSource with a fixed, stated
// seed; such sources are for evaluation only, never for a release). The
// logic lives in package cmd/dpsurv-eval/eval; this is its command line:
//
//	go run ./cmd/dpsurv-eval                 # lists the subcommands
//	go run ./cmd/dpsurv-eval sanitizers -h   # one subcommand's flags
package main

import (
	"os"

	"github.com/dpsurv/dpsurv/cmd/dpsurv-eval/eval"
)

func main() { os.Exit(eval.Main(os.Args[1:], os.Stdout, os.Stderr)) }
