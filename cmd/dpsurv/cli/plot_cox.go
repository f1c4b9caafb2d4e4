package cli

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/regression"
	"github.com/dpsurv/dpsurv/survival"
)

// coxMeanSurvival is the Cox model's survival curve for a subject at the
// covariates' mean (R's survfit(coxph) default): S(t) = exp(-H0(t)) with
// the Breslow baseline cumulative hazard of the centred linear predictor,
// H0(t) = sum over event times s <= t of d(s) / sum_{j at risk at s}
// exp(beta'(x_j - mean)). scale divides each covariate first (the fit's
// public scaling; the centre cancels with the mean). Times are the
// distinct event times.
func coxMeanSurvival(time []float64, event []bool, x [][]float64, beta, scale []float64) (ts, surv []float64, err error) {
	n := len(time)
	if n == 0 || len(x) != n {
		return nil, nil, errors.New("cox curve: no records")
	}
	p := len(beta)
	mean := make([]float64, p)
	for _, row := range x {
		if len(row) != p {
			return nil, nil, fmt.Errorf("cox curve: %d covariates for %d coefficients", len(row), p)
		}
		for k, v := range row {
			mean[k] += v / float64(n)
		}
	}
	risk := make([]float64, n)
	for i, row := range x {
		var eta float64
		for k, v := range row {
			s := 1.0
			if k < len(scale) && scale[k] > 0 {
				s = scale[k]
			}
			eta += beta[k] * (v - mean[k]) / s
		}
		risk[i] = math.Exp(eta)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return time[idx[a]] < time[idx[b]] })
	var atRisk float64
	for _, r := range risk {
		atRisk += r
	}
	h := 0.0
	for i := 0; i < n; {
		t := time[idx[i]]
		var d, leaving float64
		j := i
		for ; j < n && time[idx[j]] == t; j++ {
			if event[idx[j]] {
				d++
			}
			leaving += risk[idx[j]]
		}
		if d > 0 {
			h += d / atRisk
			ts = append(ts, t)
			surv = append(surv, math.Exp(-h))
		}
		atRisk -= leaving
		i = j
	}
	return ts, surv, nil
}

// plotCox draws a non-private Cox fit: the Kaplan–Meier curve of all
// records with the model's survival at the covariates' mean over it.
func plotCox(path, input, unit string, res regression.CoxResult, d fileData, scale []float64) error {
	if res.Projection != nil {
		return errors.New("--plot: a projected (HPPCox) fit has no curve on the original covariates")
	}
	ts, sv, err := coxMeanSurvival(d.Time, d.Event, d.Covariates, res.Beta, scale)
	if err != nil {
		return err
	}
	km, err := survival.KaplanMeier(d.Time, d.Event, 0.95)
	if err != nil {
		return fmt.Errorf("plot: km: %w", err)
	}
	xmax := 0.0
	for _, t := range d.Time {
		xmax = math.Max(xmax, t)
	}
	s := plots.KMSpec{
		Title:          "Cox proportional hazards over Kaplan–Meier, non-private reference — " + filepath.Base(input),
		TimeUnit:       unit,
		Subtitle:       []string{fmt.Sprintf("Exact estimates from the records (no privacy). The model curve is for a subject at the covariates' mean (Breslow baseline, %s ties in beta), as R's survfit(coxph); the KM pools every record.", res.Ties)},
		Cohorts:        []plots.KMCohort{npKMCohort("all records", -1, km)},
		Conf:           km.Conf,
		Parametric:     []plots.ParametricCurve{coxSteps(ts, sv)},
		ParametricName: "Cox model, survival at the covariates' mean",
		XMax:           xmax,
	}
	return writeFigure(path, s)
}

// coxSteps draws the model's step function (a drop at each event time).
func coxSteps(ts, sv []float64) plots.ParametricCurve {
	c := plots.ParametricCurve{Label: "Cox model at the covariates' mean", Position: -1, Time: []float64{0}, Surv: []float64{1}}
	prev := 1.0
	for i, t := range ts {
		c.Time = append(c.Time, t, t)
		c.Surv = append(c.Surv, prev, sv[i])
		prev = sv[i]
	}
	return c
}
