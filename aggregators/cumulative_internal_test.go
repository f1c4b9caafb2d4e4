package aggregators

import (
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
)

// A cumulative aggregate counts each patient once for the whole horizon
// (review finding 1): the tree counter is calibrated for L1 sensitivity
// KMCellSensitivity over all the leaf histograms it is fed, so adding a
// patient whose versions arrive in several windows (censored at day 3 in
// week 1, an event at day 5 in week 5, again in week 6 after a checkpoint)
// must change the concatenated leaves by at most that much. Before the fix
// the patient table was per window and the patient moved three leaves (L1 3).
func TestCumulativeOnePatientOneContributionPerHorizon(t *testing.T) {
	mem := checkedMem(t)
	cfg := testKMConfig("cum", Window{Size: time.Minute, Cumulative: true, Horizon: 52})
	key := newPatientKey()
	type version struct {
		window int
		id     string
		t      float64
		event  bool
	}
	others := []version{{0, "Q1", 2, true}, {0, "Q2", 4, false}, {4, "Q3", 6, true}, {5, "Q1", 8, true}, {5, "Q4", 1, false}}
	target := []version{{0, "P", 3, false}, {0, "P", 4, false}, {4, "P", 5, true}, {5, "P", 7, true}}
	// run feeds the versions window by window, checkpointing and restoring
	// after window 4, and returns the leaf histograms the tree counter saw.
	run := func(vs []version) []*km.Histogram {
		a := keyedAggregate(t, cfg, key, nil)
		src := dp.NewSeededSource(7)
		var leaves []*km.Histogram
		for w := 0; w < 6; w++ {
			now := time.Unix(600+60*int64(w), 0).UnixNano()
			for _, v := range vs {
				if v.window == w {
					addRows(t, a, mem, patientBatch(t, mem, []string{v.id}, []float64{v.t}, []bool{v.event}, []int32{0}), now)
				}
			}
			a.register(now)
			s := a.windowStart(now)
			h := histOf(a.open[s])
			cp := newHist(a.cfg)
			for c := range h.Events {
				copy(cp.Events[c], h.Events[c])
				copy(cp.Censor[c], h.Censor[c])
			}
			leaves = append(leaves, cp)
			if _, err := a.closeWindow(s, src); err != nil {
				t.Fatal(err)
			}
			if w == 4 { // checkpoint and restore: the horizon table survives
				snap, err := a.snapshot()
				if err != nil {
					t.Fatal(err)
				}
				a = keyedAggregate(t, cfg, key, snap)
			}
		}
		return leaves
	}
	with, without := run(append(append([]version{}, others...), target...)), run(others)
	l1 := int64(0)
	for w := range with {
		for c := range with[w].Events {
			for b := range with[w].Events[c] {
				l1 += abs64(with[w].Events[c][b]-without[w].Events[c][b]) + abs64(with[w].Censor[c][b]-without[w].Censor[c][b])
			}
		}
	}
	if float64(l1) > km.KMCellSensitivity {
		t.Fatalf("adding one patient changed the tree's leaves by L1 %d, the counter is calibrated for %v", l1, km.KMCellSensitivity)
	}
	if l1 != 1 || with[0].Censor[0][4] != without[0].Censor[0][4]+1 {
		t.Fatalf("the patient should count once, in window 0 with the latest version of that window (censored at 4): L1 %d", l1)
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
