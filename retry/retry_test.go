package retry

import (
	"context"
	"testing"
	"time"
)

func TestBackoffSequence(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		min, max time.Duration
		want     []time.Duration
	}{
		{"doubles to the cap", 50 * ms, 300 * ms, []time.Duration{50 * ms, 100 * ms, 200 * ms, 300 * ms, 300 * ms}},
		{"zero min is the default", 0, time.Second, []time.Duration{DefaultMin, 2 * DefaultMin, 4 * DefaultMin, 8 * DefaultMin, time.Second}},
		{"max below min is min", 200 * ms, ms, []time.Duration{200 * ms, 200 * ms, 200 * ms}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.min, tc.max)
			for i, w := range tc.want {
				if c := b.Current(); c != w {
					t.Errorf("step %d: Current = %v, want %v", i, c, w)
				}
				if got := b.Next(); got != w {
					t.Errorf("step %d: Next = %v, want %v", i, got, w)
				}
			}
			b.Reset()
			if got := b.Next(); got != tc.want[0] {
				t.Errorf("after Reset: Next = %v, want %v", got, tc.want[0])
			}
		})
	}
}

func TestWait(t *testing.T) {
	b := New(time.Millisecond, time.Millisecond)
	if !b.Wait(context.Background()) {
		t.Error("Wait with a live context = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b = New(time.Hour, time.Hour)
	if b.Wait(ctx) {
		t.Error("Wait with a cancelled context = true, want false")
	}
}
