package km

import (
	"math"
	"testing"
)

func TestNewHistogramLayout(t *testing.T) {
	tests := []struct {
		name     string
		bw, tMax float64
		cohorts  int
		bins     int
		wantErr  bool
	}{
		{"unit bins", 1, 100, 2, 101, false},
		{"tmax on an edge", 10, 100, 1, 11, false},
		{"tmax inside a bin", 3, 10, 1, 4, false},
		{"tmax 0", 1, 0, 1, 1, false},
		{"zero width", 0, 100, 1, 0, true},
		{"negative width", -1, 100, 1, 0, true},
		{"NaN width", math.NaN(), 100, 1, 0, true},
		{"negative tmax", 1, -1, 1, 0, true},
		{"Inf tmax", 1, math.Inf(1), 1, 0, true},
		{"no cohorts", 1, 10, 0, 0, true},
		{"too many cells", 1e-6, 1e3, 100, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHistogram(tc.bw, tc.tMax, tc.cohorts)
			if tc.wantErr {
				if err == nil {
					t.Fatal("expected an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Bins != tc.bins || h.Cohorts() != tc.cohorts || h.MemoryBytes() != 16*tc.bins*tc.cohorts {
				t.Errorf("bins %d cohorts %d memory %d; want %d, %d, %d", h.Bins, h.Cohorts(), h.MemoryBytes(), tc.bins, tc.cohorts, 16*tc.bins*tc.cohorts)
			}
			if b, clamped := h.Bin(tc.tMax); b != h.Bins-1 || clamped {
				t.Errorf("Bin(tMax) = %d, %v; want %d, false", b, clamped, h.Bins-1)
			}
		})
	}
}

func TestHistogramAddAndClamp(t *testing.T) {
	h, err := NewHistogram(10, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	adds := []struct {
		time   float64
		event  bool
		cohort int
		bin    int
	}{
		{0, true, 0, 0}, {9.99, false, 0, 0}, {10, true, 1, 1}, {100, true, 1, 10},
		{-5, true, 0, 0}, {100.5, false, 1, 10}, {1e300, true, 0, 10}, {math.Inf(1), false, 0, 10},
	}
	for _, a := range adds {
		if err := h.Add(a.time, a.event, a.cohort); err != nil {
			t.Fatalf("Add(%v): %v", a.time, err)
		}
	}
	if h.Clamped != 1 || h.CensoredAtHorizon != 3 {
		t.Errorf("Clamped = %d, CensoredAtHorizon = %d, want 1 and 3", h.Clamped, h.CensoredAtHorizon)
	}
	// Beyond the horizon (100.5, 1e300, +Inf) is (TMax, censored): the
	// event at 1e300 is not an event at the horizon.
	if h.Events[0][0] != 2 || h.Censor[0][0] != 1 || h.Events[1][1] != 1 || h.Events[1][10] != 1 ||
		h.Censor[1][10] != 1 || h.Events[0][10] != 0 || h.Censor[0][10] != 2 {
		t.Errorf("counts: events %v censor %v", h.Events, h.Censor)
	}
	if h.Records() != int64(len(adds)) {
		t.Errorf("Records = %d, want %d", h.Records(), len(adds))
	}
	for _, bad := range []struct {
		name   string
		time   float64
		cohort int
	}{{"NaN time", math.NaN(), 0}, {"cohort too large", 1, 2}, {"negative cohort", 1, -1}} {
		if err := h.Add(bad.time, true, bad.cohort); err == nil {
			t.Errorf("%s: expected an error", bad.name)
		}
	}
	if h.Records() != int64(len(adds)) {
		t.Errorf("a rejected record was counted")
	}
}

func TestHistogramMerge(t *testing.T) {
	whole, _ := NewHistogram(1, 50, 3)
	a, _ := NewHistogram(1, 50, 3)
	b, _ := NewHistogram(1, 50, 3)
	for i := 0; i < 500; i++ {
		tm, ev, c := float64((i*37)%60), i%3 == 0, i%3
		if err := whole.Add(tm, ev, c); err != nil {
			t.Fatal(err)
		}
		part := a
		if i%2 == 1 {
			part = b
		}
		if err := part.Add(tm, ev, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	for c := range whole.Events {
		for k := range whole.Events[c] {
			if a.Events[c][k] != whole.Events[c][k] || a.Censor[c][k] != whole.Censor[c][k] {
				t.Fatalf("cohort %d bin %d: merged %d/%d, whole %d/%d", c, k, a.Events[c][k], a.Censor[c][k], whole.Events[c][k], whole.Censor[c][k])
			}
		}
	}
	if a.Clamped != whole.Clamped || a.CensoredAtHorizon != whole.CensoredAtHorizon || whole.CensoredAtHorizon == 0 {
		t.Errorf("clamped %d, beyond %d, want %d, %d (> 0)", a.Clamped, a.CensoredAtHorizon, whole.Clamped, whole.CensoredAtHorizon)
	}
	for _, tc := range []struct {
		name string
		o    *Histogram
	}{
		{"nil", nil},
		{"other width", mustHist(t, 2, 50, 3)},
		{"other tmax", mustHist(t, 1, 40, 3)},
		{"other cohorts", mustHist(t, 1, 50, 2)},
		{"malformed", &Histogram{BinWidth: 1, TMax: 50, Bins: 51, Events: make([][]int64, 3), Censor: make([][]int64, 3)}},
	} {
		if err := a.Merge(tc.o); err == nil {
			t.Errorf("merge %s: expected an error", tc.name)
		}
	}
}

func mustHist(t *testing.T, bw, tMax float64, cohorts int) *Histogram {
	t.Helper()
	h, err := NewHistogram(bw, tMax, cohorts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
