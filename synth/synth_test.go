package synth

import (
	"math"
	"testing"
)

func TestGenerateDeterministicAndSane(t *testing.T) {
	o := Options{N: 20000, Cohorts: []string{"a", "b", "c"}, TimeMax: 3650, Seed: 7}
	d1, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := Generate(o)
	events := 0
	perCohort := make([]float64, 3)
	counts := make([]float64, 3)
	for i := range d1.ID {
		if d1.Time[i] != d2.Time[i] || d1.Cohort[i] != d2.Cohort[i] {
			t.Fatal("same seed, different data")
		}
		if d1.Time[i] < 1 || d1.Time[i] > 3650 || d1.Time[i] != math.Trunc(d1.Time[i]) {
			t.Fatalf("time %v outside integer [1, 3650]", d1.Time[i])
		}
		if d1.Event[i] {
			events++
		}
		perCohort[d1.Cohort[i]] += d1.Time[i]
		counts[d1.Cohort[i]]++
	}
	if f := float64(events) / 20000; f < 0.4 || f > 0.9 {
		t.Fatalf("event fraction %.2f", f)
	}
	// Later cohorts survive longer on average.
	if !(perCohort[0]/counts[0] < perCohort[2]/counts[2]) {
		t.Fatalf("cohort means %v", perCohort)
	}
	if _, err := Generate(Options{N: 1, TimeMax: 10}); err == nil {
		t.Fatal("no cohorts accepted")
	}
}
