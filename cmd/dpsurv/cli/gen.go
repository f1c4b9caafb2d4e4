package cli

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

func runGen(ctx context.Context, env Env, args []string) error {
	fs := newFlags("gen", env)
	n := fs.Int("n", 1000, "records")
	cohorts := fs.String("cohorts", "A,B,C", "cohort labels")
	tmax := fs.Float64("time-max", 3650, "administrative censoring time (public bound)")
	seed := fs.Uint64("seed", 1, "seed (synthetic data is not private)")
	output := fs.String("output", "", "output file (.csv or .arrow); required")
	ncov := fs.Int("covariates", 1, "covariates: 1 (age, with a hazard effect), 2 (+ female, 0/1), 3 (+ bmi, one decimal); female and bmi have no effect")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *output == "" {
		fmt.Fprintln(env.Stderr, "dpsurv gen: --output is required")
		return errUsage
	}
	if *ncov < 1 || *ncov > 3 {
		fmt.Fprintln(env.Stderr, "dpsurv gen: --covariates must be 1, 2 or 3")
		return errUsage
	}
	names := []string{"age", "female", "bmi"}[:*ncov]
	spec := schemas.Spec{Cohorts: splitList(*cohorts), TimeUnit: "days", Covariates: names, Columns: schemas.DefaultColumns()}
	d, err := synth.Generate(synth.Options{N: *n, Cohorts: spec.Cohorts, TimeMax: *tmax, Seed: *seed})
	if err != nil {
		return err
	}
	mem := memory.DefaultAllocator
	labels := make([]string, len(d.Cohort))
	for i, c := range d.Cohort {
		labels[i] = spec.Cohorts[c]
	}
	covs := [][]float64{d.Age}
	if *ncov > 1 {
		// Drawn from their own stream: the other columns do not change.
		src := dp.NewSeededSource(*seed ^ 0x9e3779b97f4a7c15)
		female, bmi := make([]float64, *n), make([]float64, *n)
		for i := range female {
			female[i] = float64(dp.Uint64n(src, 2))
			bmi[i] = float64(180+dp.Uint64n(src, 200)) / 10
		}
		covs = append(covs, female, bmi)
		covs = covs[:*ncov]
	}
	rec, err := schemas.BuildInput(spec, d.ID, d.Time, d.Event, labels, covs, mem)
	if err != nil {
		return fmt.Errorf("build records: %w", err)
	}
	defer rec.Release()
	if err := schemas.WriteFile(*output, rec, nil, mem); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "wrote %d synthetic records to %s\n", *n, *output)
	return nil
}
