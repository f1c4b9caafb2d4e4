package eval

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/dpsurv/dpsurv/cmd/dpsurv-eval/inference"
)

func init() {
	register("inference", "coverage of the private KM intervals and medians, size/power of the DP log-rank, error vs bin width (issue 12)", runInference)
}

func runInference(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inference", stderr)
	data := fs.String("data", "data/flchain_tte.csv", "dataset (time, event, cohort columns)")
	write := fs.String("write", "", "replace the generated block of this markdown file (default: print to stdout)")
	figure := fs.String("figure", "", "write the error-vs-bin-width figure to this .png/.svg (linked relative to -write's directory)")
	timeMax := fs.Float64("time-max", 5400, "public time bound (days)")
	kmReps := fs.Int("km-reps", 100, "bootstrap replicates of the KM coverage study per epsilon")
	sizeReps := fs.Int("size-reps", 400, "releases per epsilon of the log-rank size study")
	powerReps := fs.Int("power-reps", 100, "releases per epsilon of the power study")
	sims := fs.Int("sims", 99, "simulated null releases per log-rank test")
	records := fs.Int("size-records", 3000, "records per release of the size study")
	widthReps := fs.Int("width-reps", 10, "releases per cell of the bin-width study")
	regReps := fs.Int("reg-reps", 0, "releases per cell of the regression study (0: the plan's, as make stats runs it)")
	regRecords := fs.Int("reg-records", 0, "records per release of the regression study (0: the plan's)")
	regSteps := fs.Int("reg-psgld-steps", 0, "pSGLD's chain length in the regression study (0: the production default; shorter only for a smoke run)")
	seed := fs.Uint64("seed", 1, "seed of the studies (dp.NewSeededSource; evaluation only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kmReps < 1 || *sizeReps < 1 || *powerReps < 1 || *sims < 1 || *widthReps < 1 {
		return fmt.Errorf("replicate counts must be >= 1")
	}
	if *regReps < 0 || *regRecords < 0 || *regSteps < 0 {
		return fmt.Errorf("-reg-reps, -reg-records and -reg-psgld-steps must be >= 0")
	}
	d, err := inference.Load(*data)
	if err != nil {
		return err
	}
	link := *figure
	if *figure != "" && *write != "" {
		if rel, err := filepath.Rel(filepath.Dir(*write), *figure); err == nil {
			link = rel
		}
	}
	return fitsReport("inference", *write, args, stdout, stderr, func(w io.Writer, command string) error {
		return inference.WriteReport(w, d, inference.ReportConfig{
			DataName: filepath.Base(*data), TimeMax: *timeMax, Epsilons: []float64{0.5, 1, 2},
			KMReps: *kmReps, SizeReps: *sizeReps, PowerReps: *powerReps, Sims: *sims, SizeRecords: *records,
			Widths: []float64{1, 7, 14, 36, 60, 90, 180}, WidthReps: *widthReps, RegReps: *regReps, RegRecords: *regRecords, RegPSGLDSteps: *regSteps, Seed: *seed,
			Figure: *figure, FigureLink: link, Command: command,
		})
	})
}
