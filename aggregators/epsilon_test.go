package aggregators_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/schemas"
)

// Issue 21, defect 6: an epsilon the samplers cannot draw is refused by
// validation (naming the field), and every kind releases a window at both
// ends of the accepted range. On the code before, 1e-300 and 1e308
// validated and every window was withheld.
func TestEpsilonLimitsReleasable(t *testing.T) {
	kinds := []struct {
		name string
		mk   func(eps float64) aggregators.Config
		rows schemas.Rows
		disc bool
	}{
		{"km", func(eps float64) aggregators.Config { return kmConfig("km", time.Minute, eps) }, rowsOf("p", 200), false},
		{"km hierarchical", func(eps float64) aggregators.Config {
			c := kmConfig("kmt", time.Minute, eps)
			c.Params = aggregators.KMParams{Method: aggregators.MethodHierarchical, BinWidth: 1, LogRankSims: 19, IntervalSims: 10}
			return c
		}, rowsOf("p", 200), false},
		{"km cumulative, largest horizon", func(eps float64) aggregators.Config {
			c := kmConfig("kmc", time.Minute, eps)
			c.Params = aggregators.KMParams{Method: aggregators.MethodHierarchical, BinWidth: 1}
			c.Window.Cumulative, c.Window.Horizon = true, aggregators.MaxHorizon
			return c
		}, rowsOf("p", 200), false},
		{"weibull", func(eps float64) aggregators.Config {
			c := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: eps,
				Cohorts: cohorts, TimeMax: 100, TimeUnit: "days", Params: aggregators.WeibullParams{Rungs: 50, IntervalSims: -1}}
			return c
		}, rowsOf("p", 200), false},
		{"discrete", func(eps float64) aggregators.Config { return discConfig("disc", eps, "") }, discRows("p", 200, 1), true},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for _, eps := range []float64{aggregators.MinEpsilon / 2, 1e-300, aggregators.MaxEpsilon * 2, 1e308} {
				err := k.mk(eps).Validate()
				if err == nil || !strings.Contains(err.Error(), "epsilon:") {
					t.Errorf("epsilon %v: validation error %v, want one naming epsilon", eps, err)
				}
			}
			for _, eps := range []float64{aggregators.MinEpsilon, aggregators.MaxEpsilon} {
				cfg := k.mk(eps)
				if err := cfg.Validate(); err != nil {
					t.Fatalf("epsilon %v: %v", eps, err)
				}
				r := newRig(t, at(1), map[string]float64{"stream": 1e12}, cfg)
				if k.disc {
					r.observeDisc(0, k.rows)
				} else {
					r.observe(0, k.rows)
				}
				r.clock.Set(at(61))
				r.tick()
				if w := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": cfg.Name}); w != 0 {
					t.Errorf("epsilon %v: %v windows withheld", eps, w)
				}
				if len(r.fits.Messages()) == 0 {
					t.Errorf("epsilon %v: nothing released", eps)
				}
			}
		})
	}
}
