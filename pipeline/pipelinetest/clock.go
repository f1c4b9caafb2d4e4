package pipelinetest

import (
	"sync"
	"time"
)

// Clock is a settable clock (an aggregators.Clock) for window tests; safe
// for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the time last set.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
