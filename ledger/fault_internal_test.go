package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// faultLog is one single-partition log shared by several writers (lease
// holders, restarts), each through its own faultClient. Appends are
// delayed, duplicated and reordered: a write can land now and be
// acknowledged, land now and lose its acknowledgement, land twice, or be
// reported failed and land at some later step (in any order with other
// late writes) — or never. Reads back (Tail) and reloads (Load) fail now
// and then too.
type faultLog struct {
	mu      sync.Mutex
	rng     *rand.Rand
	log     []Entry
	pending []Entry // reported failed, still in flight
	stats   map[string]int
}

func (f *faultLog) step() {
	// Some in-flight writes land now, in random order.
	f.rng.Shuffle(len(f.pending), func(i, j int) { f.pending[i], f.pending[j] = f.pending[j], f.pending[i] })
	keep := f.pending[:0]
	for _, e := range f.pending {
		if f.rng.IntN(3) == 0 {
			f.log = append(f.log, e)
			f.stats["landed late"]++
		} else {
			keep = append(keep, e)
		}
	}
	f.pending = keep
}

func (f *faultLog) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, f.pending...)
	f.pending = nil
}

type faultClient struct {
	f    *faultLog
	next int // Tail cursor; -1 before Load
}

var errInjected = errors.New("injected fault")

func (c *faultClient) Load(context.Context) ([]Entry, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.step()
	if c.f.rng.IntN(10) == 0 {
		c.f.stats["load failed"]++
		return nil, errInjected
	}
	c.next = len(c.f.log)
	return slices.Clone(c.f.log), nil
}

func (c *faultClient) Tail(context.Context) ([]Entry, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.step()
	if c.next < 0 {
		return nil, errors.New("not loaded")
	}
	if c.f.rng.IntN(10) == 0 {
		c.f.stats["tail failed"]++
		return nil, errInjected
	}
	out := slices.Clone(c.f.log[c.next:])
	c.next = len(c.f.log)
	return out, nil
}

func (c *faultClient) Append(_ context.Context, e Entry) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.step()
	e.Release = slices.Clone(e.Release)
	switch r := c.f.rng.IntN(20); {
	case r < 10:
		c.f.log = append(c.f.log, e)
		return nil
	case r < 12: // lands, acknowledgement lost
		c.f.log = append(c.f.log, e)
		c.f.stats["ack lost"]++
		return errInjected
	case r < 14: // lands twice (a retried batch), acknowledged
		c.f.log = append(c.f.log, e)
		c.f.pending = append(c.f.pending, e)
		c.f.stats["duplicated"]++
		return nil
	case r < 18: // reported failed, lands later
		c.f.pending = append(c.f.pending, e)
		c.f.stats["delayed"]++
		return errInjected
	default: // lost
		c.f.stats["lost"]++
		return errInjected
	}
}

func (c *faultClient) Close() error { return nil }

// At most one release per window under any fault: writes to the ledger are
// delayed, duplicated, reordered, lost or acknowledged-then-lost, read-backs
// and reloads fail, two holders (the current one and a former one with a
// stale view) release the same windows, and holders restart. Every attempt
// draws fresh "noise" (a new value), so a window released twice would show
// two values. The fit topic (what Release returned for publication) must
// carry exactly one value per window key, and it must be the value a fresh
// ledger counts; every distinct value stored is charged.
func TestAtMostOneReleasePerWindowUnderLedgerFaults(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			ctx := context.Background()
			f := &faultLog{rng: rand.New(rand.NewPCG(seed, 11)), stats: map[string]int{}}
			const eps = 0.5
			open := func() *Ledger {
				for {
					l, err := Open(ctx, &faultClient{f: f, next: -1}, Options{})
					if err == nil {
						return l
					}
					if !errors.Is(err, errInjected) {
						t.Fatal(err)
					}
				}
			}
			holders := []*Ledger{open(), open()}
			published := map[string][][]byte{} // the fit topic
			draws := 0
			rng := rand.New(rand.NewPCG(seed, 12))
			const windows = 60
			for w := range windows {
				key := fmt.Sprintf("km/%d/A", w)
				// The current holder releases the window; now and then
				// a former holder (stale view) releases it too, before
				// or after, and holders restart.
				order := []int{0}
				if rng.IntN(3) == 0 {
					order = append(order, 1)
					rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				}
				for _, h := range order {
					for attempt := 0; ; attempt++ {
						if attempt > 100 {
							t.Fatalf("window %s: no release after 100 attempts", key)
						}
						b, _, err := holders[h].Release(ctx, key, []string{ScopeStream}, eps, func(map[string]float64) ([]byte, error) {
							draws++
							return []byte(fmt.Sprintf(`{"window":%d,"noise":%d}`, w, draws)), nil
						})
						if err == nil {
							published[key] = append(published[key], b)
							break
						}
						if !errors.Is(err, errInjected) && !strings.Contains(err.Error(), "not in the log") {
							t.Fatalf("window %s: %v", key, err)
						}
					}
				}
				if rng.IntN(8) == 0 {
					holders[rng.IntN(2)] = open() // restart
				}
			}
			f.flush() // every write in flight lands
			final := open()
			for key, vals := range published {
				for _, v := range vals[1:] {
					if string(v) != string(vals[0]) {
						t.Fatalf("window %s published with two values: %s and %s", key, vals[0], v)
					}
				}
				stored, ok := final.Lookup(key)
				if !ok || string(stored) != string(vals[0]) {
					t.Fatalf("window %s: published %s, the ledger counts %s", key, vals[0], stored)
				}
			}
			if len(published) != windows {
				t.Fatalf("%d windows published, want %d", len(published), windows)
			}
			// Every distinct value stored is charged once.
			distinct := map[string]bool{}
			for _, e := range f.log {
				distinct[e.Key+"\x00"+string(e.Release)] = true
			}
			if got, want := final.Spent(ScopeStream), eps*float64(len(distinct)); got != want {
				t.Fatalf("spent %v, want %v (%d distinct stored values)", got, want, len(distinct))
			}
			t.Logf("faults %v; %d stored values for %d windows", f.stats, len(distinct), windows)
		})
	}
}
