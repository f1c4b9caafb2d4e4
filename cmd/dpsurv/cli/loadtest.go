package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/dpsurv/dpsurv/ops"
)

func runLoadtest(ctx context.Context, env Env, args []string) error {
	fs := newFlags("loadtest", env)
	rate := fs.Float64("rate", 5000, "input records per second (fixed-rate mode)")
	duration := fs.Duration("duration", 30*time.Second, "how long to produce at --rate")
	maxRate := fs.Bool("max-rate", false, "backlog mode: produce --records first, then measure how fast the replicas drain them")
	records := fs.Int("records", 200000, "backlog size in records (--max-rate)")
	replicas := fs.Int("replicas", 1, "in-process dpsurv replicas in one consumer group")
	partitions := fs.Int("partitions", 0, "partitions of the input and sanitized topics (default max(4, replicas))")
	batch := fs.Int("batch", 100, "records per input message")
	maxBatch := fs.Int("max-batch", 0, "each replica's input.max_batch (default the service default)")
	interval := fs.Duration("sample", time.Second, "memory sampling interval")
	asJSON := fs.Bool("json", false, "print one JSON object (with every memory sample)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	logLevel := fs.String("log-level", "error", "services' log level (logs go to stderr)")
	rounds := fs.Int("rounds", 1, "repeat the run this many times (each on a fresh broker); text output adds the median throughput")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run here")
	memProfile := fs.String("memprofile", "", "write a heap profile at the end of the last round here")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *rounds < 1 || *rounds > 100 {
		fmt.Fprintln(env.Stderr, "dpsurv loadtest: --rounds must be in [1, 100]")
		return errUsage
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	log, err := newLogger(env.Stderr, *logLevel)
	if err != nil {
		return err
	}
	defer log.Sync()
	o := ops.LoadOptions{Rate: *rate, Duration: *duration, MaxRate: *maxRate, Records: *records, Replicas: *replicas,
		Partitions: *partitions, BatchRecords: *batch, MaxBatch: *maxBatch, SampleInterval: *interval, Log: log}
	if !*quiet {
		o.Progress = env.Stderr
	}
	var rates []float64
	var bad []string
	for r := range *rounds {
		res, err := ops.RunLoad(ctx, o)
		if err != nil {
			return err
		}
		if *asJSON {
			if err := printJSON(env.Stdout, res); err != nil {
				return err
			}
		} else {
			if *rounds > 1 {
				fmt.Fprintf(env.Stdout, "round %d of %d\n", r+1, *rounds)
			}
			printLoad(env.Stdout, res)
		}
		rates = append(rates, res.ThroughputRecordsPerS)
		if res.LostRecords > 0 || res.MismatchedDuplicates > 0 {
			bad = append(bad, fmt.Sprintf("round %d: %d records lost, %d duplicates not identical", r+1, res.LostRecords, res.MismatchedDuplicates))
		}
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return fmt.Errorf("memprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			return fmt.Errorf("memprofile: %w", err)
		}
	}
	if *rounds > 1 && !*asJSON {
		sorted := slices.Clone(rates)
		slices.Sort(sorted)
		fmt.Fprintf(env.Stdout, "median throughput    %.0f records/s over %d rounds (min %.0f, max %.0f)\n",
			sorted[len(sorted)/2], len(sorted), sorted[0], sorted[len(sorted)-1])
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

func printLoad(w io.Writer, r ops.LoadResult) {
	fmt.Fprintf(w, "mode                 %s, %d replica(s), %d partitions, %d records/message, GOMAXPROCS %d\n",
		r.Mode, r.Replicas, r.Partitions, r.BatchRecords, r.GOMAXPROCS)
	if r.Mode == "fixed-rate" {
		note := ""
		if r.Interrupted {
			note = ", interrupted"
		}
		fmt.Fprintf(w, "input                %d records in %.1f s (%.0f records/s; target %.0f%s)\n",
			r.ProducedRecords, r.DurationS, r.ProducedRecordsPerS, r.TargetRate, note)
	} else {
		fmt.Fprintf(w, "backlog              %d records drained in %.2f s\n", r.ProducedRecords, r.DurationS)
	}
	fmt.Fprintf(w, "throughput           %.0f sanitized records/s\n", r.ThroughputRecordsPerS)
	fmt.Fprintf(w, "accounting           %d sanitized, %d lost, %d duplicate messages (%d not identical)\n",
		r.SanitizedRecords, r.LostRecords, r.DuplicateMessages, r.MismatchedDuplicates)
	fmt.Fprintf(w, "per replica          %v records\n", r.ReplicaRecords)
	if r.Mode == "fixed-rate" {
		l := r.Latency
		fmt.Fprintf(w, "latency end to end   p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n", l.P50Ms, l.P95Ms, l.P99Ms, l.MaxMs)
	}
	m := r.Memory
	fmt.Fprintf(w, "heap in use (MiB)    start %.1f, middle %.1f, end %.1f\n", m.Start.HeapInuseMiB, m.Middle.HeapInuseMiB, m.End.HeapInuseMiB)
	fmt.Fprintf(w, "live heap (MiB)      start %.1f, middle %.1f, end %.1f\n", m.Start.HeapLiveMiB, m.Middle.HeapLiveMiB, m.End.HeapLiveMiB)
	fmt.Fprintf(w, "memory               %s\n", m.Growth.Verdict)
}
