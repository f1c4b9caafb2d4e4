package aggregators_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/schemas"
)

// A weibull release carries noise-aware shape and scale intervals
// (weibull.WeibullIntervals) around its estimates; with params.interval_sims
// negative they are null and interval_method says why.
func TestWeibullAggregateIntervals(t *testing.T) {
	for _, sims := range []int{39, -1} {
		cfg := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: 2,
			Cohorts: cohorts, TimeMax: 100, TimeUnit: "days", Params: aggregators.WeibullParams{Rungs: 50, IntervalSims: sims}}
		r := newRig(t, at(1), map[string]float64{"stream": 1e6}, cfg)
		var rows schemas.Rows
		for i := range 400 {
			rows.ID = append(rows.ID, "q"+time.Duration(i).String())
			u := (float64(i%200) + 0.5) / 200
			rows.Time = append(rows.Time, math.Round(40*math.Pow(-math.Log(1-u), 1/1.5)))
			rows.Event = append(rows.Event, i%5 != 0)
			rows.Cohort = append(rows.Cohort, int32(i%2))
		}
		r.observe(0, rows)
		r.clock.Set(at(61))
		r.tick()
		for _, msg := range r.fits.Messages() {
			var doc map[string]any
			if err := json.Unmarshal(msg.Value, &doc); err != nil {
				t.Fatal(err)
			}
			method, _ := doc["interval_method"].(string)
			if sims < 0 {
				if doc["shape_lower"] != nil || doc["scale_upper"] != nil || !strings.HasPrefix(method, "none") {
					t.Errorf("disabled: shape_lower %v scale_upper %v method %q", doc["shape_lower"], doc["scale_upper"], method)
				}
				continue
			}
			sl, _ := doc["shape_lower"].(float64)
			su, _ := doc["shape_upper"].(float64)
			cl, _ := doc["scale_lower"].(float64)
			cu, _ := doc["scale_upper"].(float64)
			shape, scale := doc["shape"].(float64), doc["scale"].(float64)
			t.Logf("shape %.3f [%.3f, %.3f], scale %.3f [%.3f, %.3f]", shape, sl, su, scale, cl, cu)
			if !(sl <= shape && shape <= su && su-sl < 10) || !(cl > 0 && cl <= cu) {
				t.Errorf("intervals: shape %v [%v, %v], scale %v [%v, %v]", shape, sl, su, scale, cl, cu)
			}
			if !strings.Contains(method, "bin starts every 1") || doc["interval_conf"] != 0.95 {
				t.Errorf("interval_method %q, conf %v", method, doc["interval_conf"])
			}
		}
	}
}

// Too few interval simulations for a 95% interval is a config error, not a
// failure at every release.
func TestWeibullIntervalSimsConfig(t *testing.T) {
	cfg := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: 1,
		Cohorts: cohorts, TimeMax: 100, TimeUnit: "days"}
	for sims, ok := range map[int]bool{-1: true, 0: true, 19: false, 38: false, 39: true} {
		cfg.Params = aggregators.WeibullParams{IntervalSims: sims}
		err := cfg.Validate()
		if (err == nil) != ok {
			t.Errorf("interval_sims %d: %v", sims, err)
		}
		if err != nil && !strings.Contains(err.Error(), "params.interval_sims") {
			t.Errorf("interval_sims %d: error %v does not name the field", sims, err)
		}
	}
}
