package aggregators

import (
	"testing"
	"time"
)

// A record followed beyond the public time_max is administratively
// censored at time_max (mechanisms.md section 0, erratum "time beyond the
// horizon"): a censoring in the last bin, never an event at the horizon,
// and counted in AddStats.CensoredAtHorizon. A later version of the
// patient moves the contribution out of that censoring cell.
func TestKMAggregateCensorsBeyondHorizon(t *testing.T) {
	mem := checkedMem(t)
	cfg := testKMConfig("km", Window{Size: time.Minute})
	a := keyedAggregate(t, cfg, newPatientKey(), nil)
	now := time.Unix(600, 0).UnixNano()
	st := addRows(t, a, mem, patientBatch(t, mem, []string{"p1", "p2", "p3", "p4"}, []float64{20, 5, 30, 9},
		[]bool{true, true, true, true}, []int32{0, 0, 1, 1}), now)
	if st.CensoredAtHorizon != 2 || st.Clamped != 0 {
		t.Fatalf("stats %+v: want 2 censored at the horizon (p1, p3), nothing clamped", st)
	}
	h := histOf(a.open[a.windowStart(now)])
	last := h.Bins - 1
	if h.Events[0][last] != 0 || h.Censor[0][last] != 1 || h.Events[1][last] != 1 || h.Censor[1][last] != 1 || h.Events[0][5] != 1 {
		t.Fatalf("last bin: events %v/%v censor %v/%v; want the events beyond 9 counted as censorings at 9 (p4's event at 9 kept)",
			h.Events[0][last], h.Events[1][last], h.Censor[0][last], h.Censor[1][last])
	}
	// p1 again beyond the horizon, event: the same cell (repeated); p3 now
	// an event at day 4: its censoring at the horizon is removed.
	st = addRows(t, a, mem, patientBatch(t, mem, []string{"p1", "p3"}, []float64{25, 4}, []bool{true, true}, []int32{0, 1}), now)
	if st.Repeated != 1 || st.Replaced != 1 {
		t.Fatalf("stats %+v: want p1 repeated (same censored cell), p3 replaced", st)
	}
	if h.Censor[1][last] != 0 || h.Events[1][4] != 1 || h.Censor[0][last] != 1 || h.Records() != 4 {
		t.Fatalf("after the new versions: censor %v/%v at the horizon, events %v; want 1/0 and p3's event at 4",
			h.Censor[0][last], h.Censor[1][last], h.Events[1])
	}
}

// The discrete aggregate keeps a record followed beyond time_max as
// censored in the last interval.
func TestDiscreteAggregateCensorsBeyondHorizon(t *testing.T) {
	mem := checkedMem(t)
	a := discreteAgeAggregate(t)
	now := time.Unix(600, 0).UnixNano()
	st := addRows(t, a, mem, withAge(patientBatch(t, mem, []string{"p1", "p2"}, []float64{40, 9}, []bool{true, true}, []int32{0, 1})), now)
	if st.CensoredAtHorizon != 1 {
		t.Fatalf("stats %+v: want 1 censored at the horizon", st)
	}
	w := a.open[a.windowStart(now)].(*discreteWindow)
	if w.packed[0] != 9<<1 || w.packed[1] != 9<<1|1 {
		t.Fatalf("records %#x %#x; want p1 censored in interval 9 (0x12), p2 an event there (0x13)", w.packed[0], w.packed[1])
	}
}
