package cli

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// A private weibull fit prints noise-aware intervals around its estimates;
// --interval-sims -1 prints them null.
func TestFitWeibullIntervals(t *testing.T) {
	t.Parallel()
	args := []string{"fit", "weibull", "--input", "../../../data/lung_tte.csv", "--cohorts", "1,2", "--epsilon", "2",
		"--time-max", "1100", "--rungs", "100"}
	o, e, code := run(t, append(args, "--interval-sims", "39")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(o), &res); err != nil {
		t.Fatal(err)
	}
	shape, scale := res["shape"].(float64), res["scale"].(float64)
	sl, _ := res["shape_lower"].(float64)
	su, _ := res["shape_upper"].(float64)
	// a scale limit beyond the publishable range is null (upper:
	// unbounded) or 0 (lower): a small sample's shape interval can reach
	// near 0, where the scale is unbounded below
	cl, _ := res["scale_lower"].(float64)
	cu, okU := res["scale_upper"].(float64)
	if !okU {
		cu = math.Inf(1)
	}
	if !(sl <= shape && shape <= su && su <= 10) || !(cl >= 0 && cl <= scale && scale <= cu) || res["interval_conf"] != 0.95 {
		t.Fatalf("intervals: shape %v [%v, %v], scale %v [%v, %v], conf %v", shape, sl, su, scale, cl, cu, res["interval_conf"])
	}
	if m, _ := res["interval_method"].(string); !strings.Contains(m, "39 releases") {
		t.Errorf("interval_method %q", m)
	}
	o, e, code = run(t, append(args, "--interval-sims", "-1")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	res = nil
	if err := json.Unmarshal([]byte(o), &res); err != nil {
		t.Fatal(err)
	}
	if v, ok := res["shape_lower"]; !ok || v != nil {
		t.Errorf("disabled: shape_lower %v (present %v)", v, ok)
	}
}
