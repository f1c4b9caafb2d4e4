package audit

import (
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// testKey is a fixed PRF key for tests only.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// sanitizeTE runs the production sanitizer chain (TE on the time, cohort
// and event public) over d and returns the sanitized data with pseudonyms.
func sanitizeTE(t *testing.T, d Data, eps float64, w int, tmax float64, key []byte) Data {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	spec := schemas.Spec{Cohorts: d.Cohorts, TimeUnit: "days"}
	times := make([]float64, d.Len())
	for i, x := range d.Time {
		times[i] = float64(x)
	}
	labels := make([]string, d.Len())
	for i, c := range d.Cohort {
		labels[i] = d.Cohorts[c]
	}
	ids := d.ID
	if ids == nil {
		ids = make([]string, d.Len())
		for i := range ids {
			ids[i] = fmt.Sprintf("p%d", i)
		}
	}
	rec, err := schemas.BuildInput(spec, ids, times, d.Event, labels, nil, mem)
	if err != nil {
		t.Fatalf("build input: %v", err)
	}
	defer rec.Release()
	v, err := schemas.NewValidator(spec, mem)
	if err != nil {
		t.Fatal(err)
	}
	good, dead := v.Validate(rec)
	defer good.Release()
	if len(dead) > 0 {
		t.Fatalf("%d dead letters: %v", len(dead), dead[0].Reason)
	}
	chain, err := sanitizers.New(sanitizers.Config{
		Key: key, Cohorts: d.Cohorts, TimeMax: tmax, TimeUnit: "days", PseudonymizeID: true,
		Time:   sanitizers.TimeConfig{Mechanism: "te", Epsilon: eps, Window: w},
		Public: []string{"event", "cohort"},
	}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Release()
	out, _, err := chain.Apply(good)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	s := out.Schema()
	col := func(name string) int { return s.FieldIndices(name)[0] }
	pid := out.Column(col("id")).(*array.String)
	pt := out.Column(col("time")).(*array.Int64)
	pe := out.Column(col("event")).(*array.Boolean)
	pc := out.Column(col("cohort")).(*array.Dictionary).Indices().(*array.Int32)
	san := Data{Cohorts: d.Cohorts}
	for i := 0; i < int(out.NumRows()); i++ {
		san.ID = append(san.ID, pid.Value(i))
		san.Time = append(san.Time, pt.Value(i))
		san.Event = append(san.Event, pe.Value(i))
		san.Cohort = append(san.Cohort, int(pc.Value(i)))
	}
	return san
}

// makeData builds a dataset from per-record times and cohorts (all events).
func makeData(labels []string, times []int64, cohorts []int) Data {
	d := Data{Cohorts: labels, Time: times, Cohort: cohorts, Event: make([]bool, len(times))}
	for i := range d.Event {
		d.Event[i] = true
	}
	return d
}

// interleaved is n records (all events) at times 0 to n-1 whose cohorts
// alternate between the two labels: day i belongs to cohort i%2 alone.
func interleaved(labels []string, n int) Data {
	var times []int64
	var coh []int
	for i := range n {
		times = append(times, int64(i))
		coh = append(coh, i%2)
	}
	return makeData(labels, times, coh)
}

// teKernel is NewTEKernel, failing the test on an error.
func teKernel(t *testing.T, eps float64, w int, tmax int64) *TEKernel {
	t.Helper()
	k, err := NewTEKernel(eps, w, tmax)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// scores is Scores, failing the test on an error.
func scores(t *testing.T, orig, san Data, k Kernel) [][]float64 {
	t.Helper()
	s, err := Scores(orig, san, k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func near(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol
}
