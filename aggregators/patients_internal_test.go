package aggregators

import (
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/schemas"
)

func patientBatch(t *testing.T, mem memory.Allocator, ids []string, times []float64, events []bool, cohorts []int32) *schemas.Rows {
	t.Helper()
	return &schemas.Rows{ID: ids, Time: times, Event: events, Cohort: cohorts, Covariates: [][]float64{}}
}

// withAge adds an "age" covariate column (all 50) to rows.
func withAge(r *schemas.Rows) *schemas.Rows {
	age := make([]float64, len(r.ID))
	for i := range age {
		age[i] = 50
	}
	r.Covariates = [][]float64{age}
	return r
}

// keyedAggregate builds cfg's aggregate with patient key key, restored
// from snap unless it is nil.
func keyedAggregate(t *testing.T, cfg Config, key []byte, snap *aggSnapshot) *aggregate {
	t.Helper()
	a, err := newAggregate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.setPatientKey(key); err != nil {
		t.Fatal(err)
	}
	if snap != nil {
		if err := a.restore(snap); err != nil {
			t.Fatalf("%s: restore: %v", cfg.Name, err)
		}
	}
	return a
}

// discreteAgeAggregate is a discrete-time aggregate ("dt", cohorts A and B,
// time_max 9 days in 9 intervals, 1-minute windows) on covariate age.
func discreteAgeAggregate(t *testing.T) *aggregate {
	t.Helper()
	cfg := Config{Name: "dt", Kind: KindDiscrete, Window: Window{Size: time.Minute}, Epsilon: 1,
		Cohorts: []string{"A", "B"}, TimeMax: 9, TimeUnit: "days", Covariates: []string{"age"},
		Params: DiscreteParams{Method: "output", Covariates: []string{"age"}, Centre: []float64{60}, Scale: []float64{20}, Intervals: 9}}
	a, err := newAggregate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func addRows(t *testing.T, a *aggregate, mem memory.Allocator, rows *schemas.Rows, now int64) AddStats {
	t.Helper()
	spec := schemas.Spec{Cohorts: []string{"A", "B"}, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	if len(rows.Covariates) > 0 {
		spec.Covariates = []string{"age"}
	}
	rec, err := schemas.BuildCanonical(spec, *rows, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	st, err := a.add(rec, now)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// One patient, one record per window, latest version wins: a patient
// censored at day 3 and later an event at day 7 in one window is counted
// once, as the event at day 7; an identical redelivery counts nothing; the
// same holds across a checkpoint and restore (the patient table and its
// key are in the checkpoint); and a new window counts the patient afresh.
func TestOnePatientOneRecordPerWindow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	cfg := Config{Name: "km", Kind: KindKM, Window: Window{Size: time.Minute}, Epsilon: 1,
		Cohorts: []string{"A", "B"}, TimeMax: 9, TimeUnit: "days", Params: KMParams{Method: MethodNoisyHistogram, BinWidth: 1}}
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
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
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
