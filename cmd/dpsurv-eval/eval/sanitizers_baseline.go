package eval

// sanitizers-baseline: BinSup or DPTime on a file, writing the same
// sanitized-record layout as `dpsurv sanitize`, so that the baselines can be
// audited side by side with TE-Sanitizer (`dpsurv audit --mechanism binsup
// --time-bin N`).

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/baselines"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/schemas"
)

func init() {
	register("sanitizers-baseline", "BinSup or DPTime (paper 001 baselines) on a file: -method binsup|dptime -input F -output G", runSanitizersBaseline)
}

func runSanitizersBaseline(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sanitizers-baseline", stderr)
	method := fs.String("method", "", "binsup or dptime (required)")
	input := fs.String("input", "", "input file (.csv, .arrow, .jsonl)")
	output := fs.String("output", "", "output file (.csv, .arrow, .arrows, .jsonl)")
	cohorts := fs.String("cohorts", "", "public cohort label list, comma separated (default: the labels of the input file; a real release must configure them)")
	timeMax := fs.Float64("time-max", 0, "public time bound T_max (required)")
	timeUnit := fs.String("time-unit", "days", "time unit")
	timeBin := fs.Int64("time-bin", 1, "bin width in time units")
	sizeBin := fs.Int64("size-bin", 5, "BinSup: release a (cohort, bin) count only when it is at least this")
	eps := fs.Float64("epsilon", 0, "DPTime: epsilon of the whole release")
	seed := fs.Uint64("seed", 0, "DPTime: seed the noise for a reproducible evaluation (0: secure random source; never seed a real release)")
	idCol := fs.String("id-col", "id", "id column")
	timeCol := fs.String("time-col", "time", "time column")
	eventCol := fs.String("event-col", "event", "event column")
	cohortCol := fs.String("cohort-col", "cohort", "cohort column")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *method == "" || *input == "" || *output == "" || !(*timeMax > 0) {
		return fmt.Errorf("-method, -input, -output and -time-max are required")
	}
	labels := fitsStringList(*cohorts)
	if len(labels) == 0 {
		var err error
		if labels, err = audit.ScanLabels(*input, *cohortCol); err != nil {
			return err
		}
	}
	spec := schemas.Spec{Cohorts: labels, TimeUnit: *timeUnit,
		Columns: schemas.Columns{ID: *idCol, Time: *timeCol, Event: *eventCol, Cohort: *cohortCol}}
	cfg := baselines.Config{Method: *method, Cohorts: labels, TimeMax: *timeMax, TimeUnit: *timeUnit,
		TimeBin: *timeBin, SizeBin: *sizeBin, Epsilon: *eps}
	src := dp.NewSecureSource()
	if *seed != 0 {
		src = dp.NewSeededSource(*seed)
	}
	sum, err := baselines.SanitizeFile(*input, *output, spec, cfg, src)
	if err != nil {
		return err
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}
