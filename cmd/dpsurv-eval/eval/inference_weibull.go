package eval

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/dpsurv/dpsurv/cmd/dpsurv-eval/inference"
)

func init() {
	register("inference-weibull", "coverage of the noise-aware Weibull shape/scale intervals against the non-private Wald interval (issue 12)", runInferenceWeibull)
}

func runInferenceWeibull(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inference-weibull", stderr)
	data := fs.String("data", "data/flchain_tte.csv", "dataset (time, event, cohort columns)")
	write := fs.String("write", "", "replace the generated block of this markdown file (default: print to stdout)")
	timeMax := fs.Float64("time-max", 5400, "public time bound (days)")
	reps := fs.Int("reps", 4, "bootstrap releases per cohort and epsilon")
	sims := fs.Int("sims", 0, "simulated releases per candidate shape (0: the release default)")
	seed := fs.Uint64("seed", 0, "seed of the study (evaluation only; 0 matches TestWeibullIntervalCoverageFull)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *reps < 1 {
		return fmt.Errorf("reps must be >= 1")
	}
	d, err := inference.Load(*data)
	if err != nil {
		return err
	}
	return fitsReport("inference-weibull", *write, args, stdout, stderr, func(w io.Writer, command string) error {
		return inference.WriteWeibullReport(w, d, inference.WeibullReportConfig{
			DataName: filepath.Base(*data), TimeMax: *timeMax, Epsilons: []float64{0.5, 1, 2},
			Reps: *reps, Sims: *sims, Seed: *seed, Command: command,
		})
	})
}
