package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/baselines"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/files"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// columnFlags are the input column-name flags shared by file commands.
type columnFlags struct {
	id, time, event, cohort, covariates *string
}

func addColumnFlags(fs interface {
	String(name, value, usage string) *string
}) columnFlags {
	return columnFlags{
		id:         fs.String("id-col", "id", "id column"),
		time:       fs.String("time-col", "time", "time column"),
		event:      fs.String("event-col", "event", "event column (0/1 or bool)"),
		cohort:     fs.String("cohort-col", "cohort", "cohort column"),
		covariates: fs.String("covariates", "", "covariate columns to read, comma separated"),
	}
}

func (c columnFlags) columns() schemas.Columns {
	cols := schemas.DefaultColumns()
	cols.ID, cols.Time, cols.Event, cols.Cohort = *c.id, *c.time, *c.event, *c.cohort
	return cols
}

// SanitizeSummary is the JSON line `dpsurv sanitize` prints.
type SanitizeSummary struct {
	RecordsIn         int                    `json:"records_in"`
	RecordsOut        int                    `json:"records_out"`
	DeadLettered      int                    `json:"dead_lettered"`
	DeadLetterReasons map[string]int         `json:"dead_letter_reasons"`
	DeadLetterFile    string                 `json:"dead_letter_file,omitempty"`
	ClampedTimes      int                    `json:"clamped_times"`
	Guarantees        []sanitizers.Guarantee `json:"guarantees"`
	KeyEphemeral      bool                   `json:"key_ephemeral,omitempty"`
}

func runSanitize(ctx context.Context, env Env, args []string) error {
	fs := newFlags("sanitize", env)
	input := fs.String("input", "", "input file (.csv or .arrow)")
	output := fs.String("output", "", "output file (.csv or .arrow)")
	cohorts := fs.String("cohorts", "", "public cohort label list, comma separated (required)")
	timeMax := fs.Float64("time-max", 0, "public time bound T_max (required)")
	timeUnit := fs.String("time-unit", "days", "time unit")
	teEps := fs.Float64("te-epsilon", 0, "TE-Sanitizer epsilon (0: time not sanitized, so dropped unless --public has it)")
	teLoss := fs.Float64("te-target-loss", 0, "instead of --te-epsilon: the exact worst-case loss wanted")
	teW := fs.Int("te-window", 10, "TE-Sanitizer window W")
	rrrEps := fs.Float64("rrr-epsilon", 0, "RRR epsilon on the cohort (0: cohort dropped unless --public has it)")
	keyFile := fs.String("key-file", "", "PRF key file (required; 32+ raw bytes or 64+ hex digits)")
	public := fs.String("public", "event", "input fields copied unchanged, comma separated")
	noPseudo := fs.Bool("no-pseudonym", false, "drop the id instead of writing a keyed pseudonym")
	deadFile := fs.String("dead-letter", "", "where bad rows go (JSON lines; default OUTPUT.deadletter.jsonl)")
	batch := fs.Int("batch", 8192, "records per batch")
	mech := fs.String("mechanism", "te", "te (per-record: TE-Sanitizer/RRR flags above), or the paper-001 baselines binsup | dptime (whole-file releases, for side-by-side audits)")
	timeBin := fs.Int64("time-bin", 1, "binsup/dptime: bin width in time units")
	sizeBin := fs.Int64("size-bin", 5, "binsup: smallest (cohort, bin) count released")
	dptEps := fs.Float64("dptime-epsilon", 0, "dptime: epsilon of the whole release")
	cf := addColumnFlags(fs)
	maxSkipped := addMaxSkipped(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	required := map[string]string{"--input": *input, "--output": *output, "--cohorts": *cohorts}
	if *mech == "te" {
		required["--key-file"] = *keyFile
	}
	for name, v := range required {
		if v == "" {
			fmt.Fprintf(env.Stderr, "dpsurv sanitize: %s is required\n", name)
			return errUsage
		}
	}
	sh, err := sniffInput(*input)
	if err != nil {
		return err
	}
	if err := preflight("sanitize", sh, schemas.Spec{Covariates: splitList(*cf.covariates), Columns: cf.columns()}); err != nil {
		return err
	}
	if *mech == baselines.MethodBinSup || *mech == baselines.MethodDPTime {
		spec := schemas.Spec{Cohorts: splitList(*cohorts), TimeUnit: *timeUnit, Covariates: splitList(*cf.covariates), Columns: cf.columns()}
		bcfg := baselines.Config{Method: *mech, Cohorts: spec.Cohorts, TimeMax: *timeMax, TimeUnit: *timeUnit, TimeBin: *timeBin, SizeBin: *sizeBin, Epsilon: *dptEps}
		sum, err := baselines.SanitizeFile(*input, *output, spec, bcfg, dp.NewSecureSource())
		if err != nil {
			return err
		}
		if err := checkRows("sanitize", sh, spec, sum.RecordsIn-sum.DeadLettered, sum.DeadLetterReasons, *maxSkipped); err != nil {
			return errors.Join(err, removeRefusedOutput(*output))
		}
		return printJSON(env.Stdout, sum)
	}
	if *mech != "te" {
		fmt.Fprintf(env.Stderr, "dpsurv sanitize: unknown --mechanism %q (te, binsup, dptime)\n", *mech)
		return errUsage
	}
	key, err := app.ReadKey(*keyFile)
	if err != nil {
		return err
	}
	spec := schemas.Spec{Cohorts: splitList(*cohorts), TimeUnit: *timeUnit, Covariates: splitList(*cf.covariates), Columns: cf.columns()}
	cfg := sanitizers.Config{
		Key: key, Cohorts: spec.Cohorts, TimeMax: *timeMax, TimeUnit: *timeUnit, PseudonymizeID: !*noPseudo,
		Public: splitList(*public),
	}
	if *teEps > 0 || *teLoss > 0 {
		cfg.Time = sanitizers.TimeConfig{Mechanism: "te", Epsilon: *teEps, TargetLoss: *teLoss, Window: *teW}
	}
	if *rrrEps > 0 {
		cfg.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: *rrrEps}
	}
	sum, err := SanitizeFile(*input, *output, *deadFile, spec, cfg, *batch)
	if err != nil {
		return err
	}
	if err := checkRows("sanitize", sh, spec, sum.RecordsOut, sum.DeadLetterReasons, *maxSkipped); err != nil {
		if sum.DeadLetterFile != "" {
			err = fmt.Errorf("%w\n  the rows skipped are in %s", err, sum.DeadLetterFile)
		}
		return errors.Join(err, removeRefusedOutput(*output))
	}
	return printJSON(env.Stdout, sum)
}

// removeRefusedOutput deletes the output of a refused sanitize run, so
// that nothing reads a file sanitized from (almost) no row.
func removeRefusedOutput(path string) error {
	var errs []error
	for _, p := range []string{path, path + ".meta.json"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the refused output %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// SanitizeFile runs the stream's processor (sanitize.Processor in a
// pipeline.Stream) over a file: a file source (package files) decodes and
// validates the input in batches, a file sink writes the sanitized records
// with the input's column names, and bad rows go to the dead-letter file,
// one JSON line each, encoded as on the dead-letter topic (with the source
// position: the input's base name and the batch number); never silently
// dropped.
func SanitizeFile(input, output, deadPath string, spec schemas.Spec, cfg sanitizers.Config, batch int) (SanitizeSummary, error) {
	mem := memory.DefaultAllocator
	sum := SanitizeSummary{DeadLetterReasons: map[string]int{}}
	chain, err := sanitizers.New(cfg, mem)
	if err != nil {
		return sum, err
	}
	defer chain.Release()
	sum.Guarantees = chain.Guarantees()
	v, err := schemas.NewValidator(spec, mem)
	if err != nil {
		return sum, fmt.Errorf("schema: %w", err)
	}
	if deadPath == "" {
		deadPath = output + ".deadletter.jsonl"
	}
	src, err := files.NewSource(input, v, batch)
	if err != nil {
		return sum, fmt.Errorf("sanitize %s: %w", input, err)
	}
	defer src.Close()
	out := files.NewRecordSink(output, spec.RenameToInput(), mem)
	dead := files.NewLineSink(deadPath)
	proc := &sanitize.Processor{Decoder: src, Chain: chain, Mem: mem, Metrics: sanitize.NewMetrics(nil), Log: zap.NewNop()}
	stream := &pipeline.Stream{Source: src, Processor: proc, Metrics: pipeline.NewMetrics(nil), Log: zap.NewNop(), Workers: 1,
		Routes:   map[string]message.Sink{sanitize.RouteOutput: out, sanitize.RouteDeadLetter: dead},
		Failures: sanitize.DeadLetters{}, OnAck: sum.add}
	err = stream.Run(context.Background())
	sum.ClampedTimes = int(proc.Clamped())
	if errors.Is(err, message.ErrEndOfInput) {
		err = nil
	}
	if empty := src.Empty(); empty != nil {
		if err == nil && out.Rows() == 0 {
			// No good row: the output still gets its header (schema).
			err = ensureOutput(out, chain, empty)
		}
		empty.Release()
	}
	err = errors.Join(err, out.Close(), dead.Close())
	if dead.Opened() {
		sum.DeadLetterFile = deadPath
	}
	if err != nil {
		return sum, fmt.Errorf("sanitize %s: %w", input, err)
	}
	sum.RecordsOut = out.Rows()
	return sum, nil
}

// ensureOutput writes the sanitized empty record to out if nothing was
// written.
func ensureOutput(out *files.RecordSink, chain *sanitizers.Chain, empty arrow.Record) error {
	rec, _, err := chain.Apply(empty)
	if err != nil {
		return err
	}
	defer rec.Release()
	return out.Ensure(rec)
}

// add counts the messages written for an acknowledged batch (the
// stream's OnAck, called by its one write stage): every one stands for its
// Rows input records, and each dead letter is one.
func (sum *SanitizeSummary) add(written []pipeline.Routed) {
	for _, r := range written {
		sum.RecordsIn += r.Rows
		if r.Route == sanitize.RouteDeadLetter {
			sum.DeadLettered++
			sum.DeadLetterReasons[r.Reason]++
		}
	}
}
