package aggregators

import (
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/schemas"
)

// Helpers of the package's internal tests.

// checkedMem is an Arrow allocator that fails t if anything allocated
// from it is not released by the end of the test.
func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// testKMConfig is a km aggregate (cohorts A and B, time_max 9 days in
// unit bins, the flat noisy histogram, epsilon 1) with window w.
func testKMConfig(name string, w Window) Config {
	return Config{Name: name, Kind: KindKM, Window: w, Epsilon: 1,
		Cohorts: []string{"A", "B"}, TimeMax: 9, TimeUnit: "days", Params: KMParams{Method: MethodNoisyHistogram, BinWidth: 1}}
}

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
