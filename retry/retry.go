package retry

import (
	"context"
	"time"
)

// DefaultMin is the first delay of a Backoff with a zero Min.
const DefaultMin = 100 * time.Millisecond

// Backoff is an exponential delay between retries: Min, 2·Min, 4·Min, …,
// capped at Max.
type Backoff struct {
	Min, Max time.Duration
	next     time.Duration
}

// New returns a Backoff from min to max.
func New(min, max time.Duration) *Backoff { return &Backoff{Min: min, Max: max} }

func (b *Backoff) bounds() (lo, hi time.Duration) {
	lo = b.Min
	if lo <= 0 {
		lo = DefaultMin
	}
	return lo, max(b.Max, lo)
}

// Current is the delay the next call of Next or Wait will use.
func (b *Backoff) Current() time.Duration {
	lo, hi := b.bounds()
	if b.next < lo {
		return lo
	}
	return min(b.next, hi)
}

// Next returns the delay to wait now and doubles the following one.
func (b *Backoff) Next() time.Duration {
	d := b.Current()
	_, hi := b.bounds()
	b.next = min(2*d, hi)
	return d
}

// Reset makes the next delay Min again (after a success).
func (b *Backoff) Reset() { b.next = 0 }

// Wait sleeps for Next(), or until ctx is done; it returns false if ctx
// ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
