package synth

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestDiscreteWorldPCGPath: Draw on a *rand.PCG (its direct event
// draws) gives the records Draw gives on the same stream wrapped in a
// *rand.Rand (every draw through math/rand/v2's Rand), bit for bit, for
// both links; and the event draws' formula is math/rand/v2's Float64 (a
// change of the standard library's would show here first).
func TestDiscreteWorldPCGPath(t *testing.T) {
	for _, cloglog := range []bool{false, true} {
		w := DiscreteWorld{Intervals: 200, Baseline: -3, Beta: []float64{1, -1}, Cloglog: cloglog}
		for seed := range uint64(4) {
			t1, e1, x1 := w.Draw(rand.NewPCG(seed, 7), 3000)
			t2, e2, x2 := w.Draw(rand.New(rand.NewPCG(seed, 7)), 3000)
			if !slices.Equal(t1, t2) || !slices.Equal(e1, e2) {
				t.Fatalf("cloglog %v seed %d: the PCG path drew other records", cloglog, seed)
			}
			for i := range x1 {
				if !slices.Equal(x1[i], x2[i]) {
					t.Fatalf("cloglog %v seed %d: record %d covariates %v, %v", cloglog, seed, i, x1[i], x2[i])
				}
			}
		}
	}
	a, b := rand.NewPCG(9, 9), rand.New(rand.NewPCG(9, 9))
	for range 100000 {
		if v, f := a.Uint64(), b.Float64(); float64(v<<11>>11)/(1<<53) != f {
			t.Fatalf("Float64 %v, the event draws' formula %v", f, float64(v<<11>>11)/(1<<53))
		}
	}
}

// DiscreteWorld: the same stream gives the same records; every time is an
// interval's midpoint in (0, 1), every covariate inside the cube
// [-1/sqrt(p), 1/sqrt(p)]^p, and the event share is that of the constant
// hazard (about 1 in 21 per interval at baseline -3 with censoring uniform
// on 200 intervals: 0.90 of the records have their event).
func TestDiscreteWorld(t *testing.T) {
	w := DiscreteWorld{Intervals: 200, Baseline: -3, Beta: []float64{1, -1}}
	time, event, x := w.Draw(rand.New(rand.NewPCG(1, 2)), 4000)
	time2, _, _ := w.Draw(rand.New(rand.NewPCG(1, 2)), 4000)
	if !slices.Equal(time, time2) {
		t.Fatal("the same stream gave different records")
	}
	if cap(x[0]) != 2 {
		t.Fatal("a row's capacity reaches into the next row")
	}
	h := 1 / math.Sqrt2
	events := 0
	for i, ti := range time {
		s := ti*200 + 0.5
		if ti <= 0 || ti >= 1 || math.Abs(s-math.Round(s)) > 1e-9 {
			t.Fatalf("record %d: time %v is not an interval's midpoint in (0, 1)", i, ti)
		}
		for _, v := range x[i] {
			if math.Abs(v) > h {
				t.Fatalf("record %d: covariate %v outside [-%v, %v]", i, v, h, h)
			}
		}
		if event[i] {
			events++
		}
	}
	// P(event) = E over c of 1 - (1-p)^c with p = logistic(-3) (x averages
	// out to first order): 0.900; its sd over 4000 draws is 0.005, so the
	// band is 6 sd wide on each side.
	if share := float64(events) / 4000; share < 0.87 || share > 0.93 {
		t.Errorf("event share %.3f, want about 0.90", share)
	}
}
