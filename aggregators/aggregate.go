package aggregators

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/dp"
)

// Clock is the time source of window assignment and closing (injected in
// tests).
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// Reasons a record is not counted (metric labels).
const (
	SkipNoObservedAt     = "no_observed_at"
	SkipFutureObservedAt = "future_observed_at"
)

// AddStats counts what one batch did to an aggregate.
type AddStats struct {
	Counted int
	// Replaced counts records of a patient already in the window with a
	// different value: the newer version replaced the older one (latest
	// version wins); Repeated those identical to the patient's counted one.
	Replaced int
	Repeated int
	Late     int
	Clamped  int
	// CensoredAtHorizon counts records followed beyond the public
	// time_max, counted as (time_max, censored): administrative censoring
	// (mechanisms.md section 0), never an event at the horizon.
	CensoredAtHorizon int
	Skipped           map[string]int
}

// closing is a window taken out of the open set: its counts are final and
// persisted in a checkpoint before its release is drawn.
type closing struct {
	start int64  // ns since the epoch
	w     window // the window's state; nil when stepped into a counter
	step  int    // counter kinds: the counter step holding this window
	draw  string // counter kinds: random nonce of the step (windowDoc.Draw)
	fails int    // failed release attempts in this process
	// buildErr is the error of a release build that failed after drawing
	// its noise (the window is stored as withheld: WithheldBuildFailed).
	buildErr error
	// withhold, when set, is why the window is withheld unfitted (no
	// counts kept, w nil): WithheldPendingLimit. It is charged at release.
	withhold string
}

// aggregate is one configured aggregate's window state. Its memory is
// O(open windows x bins x cohorts): records are counted, never kept —
// except by discrete aggregates, which keep up to max_records compact
// records per open window (discrete.go).
type aggregate struct {
	cfg  Config
	kind kind // the kind's defaults, checks, window state and release
	// counter is the kind's state that outlives the windows (nil unless
	// the kind is a counter); plan is how its windows are released.
	counter    counter
	plan       plan
	size, late int64 // ns
	// open holds the open windows' state (the kind's window type).
	open map[int64]window
	// capped marks the open windows in which a patient bound bound
	// (MaxPatientsPerWindow, MaxPatientsPerHorizon): they are withheld.
	capped       map[int64]bool
	closedBefore int64 // windows starting before this (ns) are closed
	closing      []*closing
	// patients holds, per open window, each patient's one contribution
	// (patients.go): one patient, one record per window, latest version
	// wins.
	patients map[int64]patientTable
	// foreign is set when a window's stored release carries another
	// holder's counter draw (windowDoc.Draw): the later windows are
	// withheld.
	foreign bool
	prf     *dp.PRF // fingerprint key (from the checkpoint)
	rs      dp.RecordState
	// registered is the latest processing-time window this engine
	// registered (math.MinInt64 before its first Tick or record).
	registered int64
}

func newAggregate(cfg Config) (*aggregate, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &aggregate{cfg: cfg, kind: kindOf(cfg), size: int64(cfg.Window.Size), late: int64(cfg.Window.Lateness),
		open: map[int64]window{}, closedBefore: math.MinInt64, registered: math.MinInt64, patients: map[int64]patientTable{}, capped: map[int64]bool{}}
	a.plan = windowPlan(a)
	if p, ok := a.kind.(planner); ok {
		a.plan = p.plan(a)
	}
	if c, ok := a.kind.(counter); ok {
		if err := c.init(a); err != nil {
			return nil, fmt.Errorf("aggregate %q: %w", cfg.Name, err)
		}
		a.counter = c
	}
	return a, nil
}

// windowStart returns the start (ns) of the epoch-aligned window holding t.
func (a *aggregate) windowStart(tns int64) int64 {
	s := tns - tns%a.size
	if tns%a.size < 0 {
		s -= a.size
	}
	return s
}

// register opens, empty, every window the clock says may receive records
// now: with processing time the current one; with event time every window
// that started by now and closes after now. Which windows exist depends on
// the clock and the service's uptime only, never on the data, so whether a
// window is released reveals nothing about the records. With processing
// time that includes the windows the clock passed since this engine's last
// registration: a Tick that outlasts a whole window (its ledger and topic
// I/O on a loaded machine) leaves that window empty, not unreleased.
// Windows before the engine's first registration (downtime) are not
// registered.
func (a *aggregate) register(now int64) {
	cur := a.windowStart(now)
	if a.cfg.Window.Time == TimeProcessing {
		from := cur
		if a.registered != math.MinInt64 && a.registered < cur {
			from = a.registered + a.size
		}
		for s := from; s <= cur; s += a.size {
			a.ensure(s)
		}
		a.registered = max(a.registered, cur)
		return
	}
	for s := cur; s+a.size+a.late > now; s -= a.size {
		a.ensure(s)
	}
}

func (a *aggregate) ensure(s int64) {
	if s < a.closedBefore {
		return
	}
	if _, ok := a.open[s]; !ok {
		a.open[s] = a.kind.open(a)
	}
}

// add counts the rows of a canonical record (schemas.CanonicalSchema).
func (a *aggregate) add(rec arrow.Record, now int64) (AddStats, error) {
	var st AddStats
	n := int(rec.NumRows())
	if n == 0 {
		return st, nil
	}
	a.register(now)
	return a.kind.add(a, rec, now)
}

// due returns the open windows whose end + lateness has passed, oldest
// first.
func (a *aggregate) due(now int64) []int64 {
	var out []int64
	for s := range a.open {
		if s+a.size+a.late <= now {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// errHorizon is returned by closeWindow when a counter kind (cumulative
// km) has used its horizon.
var errHorizon = errors.New("cumulative horizon reached")

// closeWindow moves window s out of the open set. A counter kind steps
// its counter (drawing that node's noise); the caller must have made the
// plan's charge first.
func (a *aggregate) closeWindow(s int64, src dp.Source) (*closing, error) {
	w := a.open[s]
	a.drop(s)
	if a.counter != nil {
		return a.counter.step(a, s, w, src)
	}
	return &closing{start: s, w: w}, nil
}

// pending is the number of a's closed windows waiting for their release
// (those withheld unfitted hold no counts and are not counted).
func (a *aggregate) pending() int {
	n := 0
	for _, c := range a.closing {
		if c.withhold == "" {
			n++
		}
	}
	return n
}

// drop removes open window s without releasing it.
func (a *aggregate) drop(s int64) {
	delete(a.open, s)
	delete(a.patients, s)
	delete(a.capped, s)
	a.closedBefore = max(a.closedBefore, s+a.size)
}

// memoryBytes is the size of the counts held (open and closing windows,
// tree counter).
func (a *aggregate) memoryBytes() int {
	n := 0
	for _, w := range a.open {
		n += w.bytes()
	}
	for _, t := range a.patients {
		n += patientTableBytes(t)
	}
	for _, c := range a.closing {
		if c.w != nil {
			n += c.w.bytes()
		}
	}
	if a.counter != nil {
		n += a.counter.bytes(a)
	}
	return n
}
