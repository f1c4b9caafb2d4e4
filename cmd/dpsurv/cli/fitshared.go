package cli

// Steps the fit subcommands share.

import "github.com/dpsurv/dpsurv/survival"

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
