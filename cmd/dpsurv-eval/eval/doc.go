// Package eval is the evaluation library behind cmd/dpsurv-eval: it
// regenerates the evaluation tables and figures of docs/evaluation*.md from
// the repository's datasets, deterministically (every random draw comes from
// dp.NewSeededSource with a fixed, stated seed; such sources are for
// evaluation only, never for a release).
//
// Main runs one subcommand with the command line's arguments and writers and
// returns the exit code; the command is a thin main over it. Each subcommand
// lives in its own file and registers itself in init(), so that several
// evaluations can be added without touching this file.
package eval
