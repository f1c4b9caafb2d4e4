package aggregators

import (
	"testing"
	"time"
)

// One patient, one record per window, latest version wins: a patient
// censored at day 3 and later an event at day 7 in one window is counted
// once, as the event at day 7; an identical redelivery counts nothing; the
// same holds across a checkpoint and restore (the patient table and its
// key are in the checkpoint); and a new window counts the patient afresh.
func TestOnePatientOneRecordPerWindow(t *testing.T) {
	mem := checkedMem(t)
	cfg := testKMConfig("km", Window{Size: time.Minute})
	key := newPatientKey()
	a := keyedAggregate(t, cfg, key, nil)
	now := time.Unix(600, 0).UnixNano()
	s := a.windowStart(now)
	st := addRows(t, a, mem, patientBatch(t, mem, []string{"MRN-1", "MRN-2"}, []float64{3, 4}, []bool{false, true}, []int32{0, 1}), now)
	if st.Counted != 2 {
		t.Fatalf("counted %d, want 2", st.Counted)
	}
	// MRN-1's next version (an event at day 7) and an identical copy of
	// MRN-2's record.
	st = addRows(t, a, mem, patientBatch(t, mem, []string{"MRN-1", "MRN-2"}, []float64{7, 4}, []bool{true, true}, []int32{0, 1}), now)
	if st.Counted != 0 || st.Replaced != 1 || st.Repeated != 1 {
		t.Fatalf("second batch: %+v, want 1 replaced, 1 repeated", st)
	}
	h := histOf(a.open[s])
	check := func(h interface{ Records() int64 }, want int64) {
		t.Helper()
		if n := h.Records(); n != want {
			t.Fatalf("window holds %d records, want %d (one per patient)", n, want)
		}
	}
	check(h, 2)
	if h.Censor[0][3] != 0 || h.Events[0][7] != 1 || h.Events[1][4] != 1 {
		t.Fatalf("cells: censor[A][3]=%d events[A][7]=%d events[B][4]=%d; want 0, 1, 1", h.Censor[0][3], h.Events[0][7], h.Events[1][4])
	}

	// Checkpoint and restore into a fresh aggregate with the same key: a
	// further version still replaces, it does not add.
	snap, err := a.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b := keyedAggregate(t, cfg, key, snap)
	st = addRows(t, b, mem, patientBatch(t, mem, []string{"MRN-1"}, []float64{8}, []bool{false}, []int32{0}), now)
	if st.Replaced != 1 || st.Counted != 0 {
		t.Fatalf("after restore: %+v, want 1 replaced", st)
	}
	check(histOf(b.open[s]), 2)
	if histOf(b.open[s]).Events[0][7] != 0 || histOf(b.open[s]).Censor[0][8] != 1 {
		t.Fatal("after restore the latest version did not replace the counted one")
	}

	// The next window counts the patient again (once).
	next := now + int64(time.Minute)
	st = addRows(t, b, mem, patientBatch(t, mem, []string{"MRN-1"}, []float64{9}, []bool{true}, []int32{0}), next)
	if st.Counted != 1 {
		t.Fatalf("next window: %+v, want 1 counted", st)
	}
	if _, err := b.closeWindow(s, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.patients[s]; ok {
		t.Fatal("closed window's patient table kept")
	}
}

// The discrete aggregate keeps one record per patient too.
func TestOnePatientOneRecordPerDiscreteWindow(t *testing.T) {
	mem := checkedMem(t)
	a := discreteAgeAggregate(t)
	now := time.Unix(600, 0).UnixNano()
	s := a.windowStart(now)
	addRows(t, a, mem, withAge(patientBatch(t, mem, []string{"p1", "p2"}, []float64{3, 4}, []bool{false, true}, []int32{0, 1})), now)
	st := addRows(t, a, mem, withAge(patientBatch(t, mem, []string{"p1"}, []float64{7}, []bool{true}, []int32{0})), now)
	if st.Replaced != 1 || a.open[s].(*discreteWindow).len() != 2 {
		t.Fatalf("%+v, %d records kept; want 1 replaced, 2 records", st, a.open[s].(*discreteWindow).len())
	}
	if v := a.open[s].(*discreteWindow).packed[0]; v != 7<<1|1 {
		t.Fatalf("p1's record is %#x, want its latest version (interval 7, event)", v)
	}
}
