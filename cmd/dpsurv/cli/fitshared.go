package cli

// Steps the fit subcommands share.

import (
	"flag"
	"fmt"

	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/survival"
)

// begin is the start of `fit NAME` once its flags are parsed: the common
// flags are checked (commonFit.check), a private release that charges
// budget is checked against --budget-file before any work, and the
// progress display starts on env's stderr (the caller finishes it).
func (c commonFit) begin(env *Env, name string, timeMax *float64, budget *budgetFlags, charges bool) (*progress, error) {
	if err := c.check(*env, name, timeMax); err != nil {
		return nil, err
	}
	if charges && !c.eps.inf() {
		if err := budget.check(*c.input, "fit "+name, c.eps.v); err != nil {
			return nil, err
		}
	}
	return startProgress(env, "fit "+name), nil
}

// beginLoad is begin, then load under the phase "reading the input": the
// start of a fit on the input's valid rows. On an error after begin it
// finishes the progress display itself; otherwise the caller finishes it.
func (c commonFit) beginLoad(env *Env, name string, timeMax *float64, budget *budgetFlags, charges bool) (*progress, schemas.Spec, fileData, error) {
	prog, err := c.begin(env, name, timeMax, budget, charges)
	if err != nil {
		return nil, schemas.Spec{}, fileData{}, err
	}
	prog.setPhase("reading the input", 0)
	spec, d, err := c.load(*env)
	if err != nil {
		prog.finish()
		return nil, spec, d, err
	}
	return prog, spec, d, nil
}

// cohortKM is the non-private Kaplan–Meier curve (95% intervals) of the
// rows of d in cohort k, as `fit km --epsilon inf` and `fit km --naive`
// publish it; ok is false when the cohort has no row.
func cohortKM(d fileData, k int) (km survival.KMCurve, ok bool, err error) {
	var tt []float64
	var ee []bool
	for i := range d.Time {
		if int(d.Cohort[i]) == k {
			tt = append(tt, d.Time[i])
			ee = append(ee, d.Event[i])
		}
	}
	if len(tt) == 0 {
		return survival.KMCurve{}, false, nil
	}
	km, err = survival.KaplanMeier(tt, ee, 0.95)
	return km, err == nil, err
}

// parse parses a fit's flags and checks the figure's --time-unit.
func (c commonFit) parse(fs *flag.FlagSet, args []string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	if *c.plot != "" { // refused before the fit (and its budget charge)
		if err := plots.CheckPath(*c.plot); err != nil {
			return err
		}
	}
	return unitOK(*c.unit)
}

// load is spec then read: the input's spec and its valid rows.
func (c commonFit) load(env Env) (schemas.Spec, fileData, error) {
	spec, err := c.spec()
	if err != nil {
		return spec, fileData{}, err
	}
	d, err := c.read(env, spec)
	return spec, d, err
}

// regressionSpec is spec for a regression fit, which refuses an input
// without --covariates.
func (c commonFit) regressionSpec(env Env) (schemas.Spec, error) {
	spec, err := c.spec()
	if err != nil {
		return spec, err
	}
	if len(spec.Covariates) == 0 {
		fmt.Fprintf(env.Stderr, "dpsurv fit %s: --covariates is required\n", c.name)
		return spec, errUsage
	}
	return spec, nil
}
