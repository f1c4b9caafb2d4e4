package aggregators_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/schemas"
)

// Every kind's fit message carries "low_information" and
// "low_information_reason" at its top level (issue 19): a weibull window of
// about 1000 records per cohort at epsilon 0.01 (count noise SD 566) and a
// discrete window of 40 records are flagged; the same weibull window at a
// large epsilon is not.
func TestFitMessagesFlagLowInformation(t *testing.T) {
	wb := func(name string, eps float64) aggregators.Config {
		c := aggregators.Config{Name: name, Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: eps,
			Cohorts: cohorts, TimeMax: 100, TimeUnit: "days",
			Params: aggregators.WeibullParams{IntervalSims: -1}} // the flag from the noisy event count alone
		return c
	}
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, wb("small", 0.01), wb("large", 1e3))
	rd := newRig(t, at(1), map[string]float64{"stream": 1e6}, discConfig("dt", 1, "output"))
	var big schemas.Rows
	for i := range 2000 {
		u := (float64(i%1000) + 0.5) / 1000
		big.ID = append(big.ID, "q"+time.Duration(i).String())
		big.Time = append(big.Time, math.Round(40*math.Pow(-math.Log(1-u), 1/1.5)))
		big.Event = append(big.Event, i%5 != 0)
		big.Cohort = append(big.Cohort, int32(i%2))
	}
	r.observe(0, rowsOf("s", 40))
	r.observe(1, big)
	rd.observeDisc(0, discRows("d", 40, 3))
	for _, x := range []*rig{r, rd} {
		x.clock.Set(at(61))
		x.tick()
	}
	raw := map[string]map[string]json.RawMessage{}
	for _, m := range append(r.fits.Messages(), rd.fits.Messages()...) {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(m.Value, &v); err != nil {
			t.Fatal(err)
		}
		raw[string(m.Key)] = v
	}
	got := r.fits.fits(t)
	for k, v := range rd.fits.fits(t) {
		got[k] = v
	}
	check := func(k string, want bool) {
		t.Helper()
		m, ok := got[k]
		if !ok {
			t.Fatalf("no message %s", k)
		}
		if _, ok := raw[k]["low_information"]; !ok {
			t.Fatalf("%s: no top-level low_information key", k)
		}
		// the horizon rule is stated and the count censored at it withheld
		if string(raw[k]["censored_at_horizon"]) != "null" || m.HorizonRule != aggregators.HorizonRule {
			t.Fatalf("%s: censored_at_horizon %s, horizon_rule %q", k, raw[k]["censored_at_horizon"], m.HorizonRule)
		}
		if m.LowInformation != want || (want && m.LowInformationReason == "") || (!want && m.LowInformationReason != "") {
			t.Fatalf("%s: low_information %v (%q), want %v", k, m.LowInformation, m.LowInformationReason, want)
		}
	}
	for _, c := range cohorts {
		check(key("small", 0, c), true)
		check(key("large", 0, c), false)
	}
	check(key("dt", 0, aggregators.DiscreteCohort), true)
}
