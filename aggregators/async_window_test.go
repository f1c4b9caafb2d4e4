package aggregators_test

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
)

// wbConfig is a weibull aggregate on rowsOf's times (intervals off: they
// take seconds and are tested elsewhere).
func wbConfig(name string, size time.Duration, eps float64) aggregators.Config {
	cfg := aggregators.Config{Name: name, Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: size}, Epsilon: eps,
		Cohorts: cohorts, TimeMax: 9, TimeUnit: "days", Params: aggregators.WeibullParams{IntervalSims: -1}}
	return cfg
}

// An asynchronous fit is drawn once: a km release of the same stream scope
// recorded while it runs does not discard it (issue 21: a 56 s weibull fit
// was thrown away because a km release changed the shared stream scope).
// The release states the budget that remained after its own charge, as the
// ledger computed it when it recorded the release.
func TestAsyncFitNotRestartedByOtherRelease(t *testing.T) {
	synctest.Test(t, testAsyncFitNotRestartedByOtherRelease)
}

// In a synctest bubble: the dt fit waits at a gate until km's release is
// recorded (synctest.Wait: every other goroutine of the bubble blocked).
func testAsyncFitNotRestartedByOtherRelease(t *testing.T) {
	var builds atomic.Int64
	t.Cleanup(aggregators.SetBuildFault(func() error { builds.Add(1); return nil }))
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open)
	t.Cleanup(aggregators.SetFitGate(func(agg string, _ time.Time) {
		if agg == "dt" {
			<-gate
		}
	}))
	clock := newClock(at(1))
	fits := &captureSink{}
	e, l := asyncEngine(t, true, clock, fits, discCfg("dt", 2), kmConfig("km", time.Minute, 1))
	rec := discRecord(t, 300)
	if err := e.Observe(0, 0, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	clock.Set(at(61))
	ctx := context.Background()
	// The first Tick starts both fits; km's ends, dt's waits at the gate;
	// the second records and publishes km's release.
	if _, err := e.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if _, err := e.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(fits.Messages()); n != len(cohorts) {
		t.Fatalf("%d messages published while the dt fit runs, want km's %d", n, len(cohorts))
	}
	open()
	tickUntilPublished(t, e, fits, 1+len(cohorts))
	if n := builds.Load(); n != 2 {
		t.Errorf("%d release builds, want 2 (km once, the discrete fit once: never restarted)", n)
	}
	got := fits.fits(t)
	var dt aggregators.FitMessage
	ok := false
	for _, f := range got {
		if f.Aggregate == "dt" {
			dt, ok = f, true
		}
	}
	if !ok {
		t.Fatalf("no dt release among %d messages", len(got))
	}
	if r, _ := l.Remaining("stream"); r != 1e6-3 {
		t.Fatalf("ledger remaining %v, want %v", r, 1e6-3)
	}
	// km was recorded first (while dt's fit ran), dt after it.
	if s := dt.BudgetRemaining["stream"]; s != 1e6-3 {
		t.Errorf("dt states budget_remaining.stream %v, want %v (after both charges)", s, 1e6-3)
	}
}

// km and weibull on 5 s windows sharing the stream scope, a window closing
// on every Tick (issue 21: km released 17 of 17 windows, weibull 0 of 9,
// every weibull fit discarded by the km release of the same Tick and
// refitted). Every window of both is released, each weibull window's fit
// drawn once, and the budget statements are exact: in ledger order, each
// release states the budget minus every charge up to its own.
func TestAsyncWeibullReleasesEveryWindowBesideKM(t *testing.T) {
	const windows = 12
	var builds atomic.Int64
	t.Cleanup(aggregators.SetBuildFault(func() error { builds.Add(1); return nil }))
	clock := newClock(at(0))
	fits := &captureSink{}
	e, l := asyncEngine(t, true, clock, fits, wbConfig("weibull", 5*time.Second, 0.5), kmConfig("km", 5*time.Second, 1))
	ctx := context.Background()
	for w := range windows {
		observeWindow(t, e, clock, w, 200)
		if _, err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitFits(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 { // the last fits end; no window closes any more
		if _, err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitFits(ctx); err != nil {
			t.Fatal(err)
		}
	}
	type rel struct {
		agg string
		eps float64
		rem float64
	}
	byWindow := map[string]rel{}
	count := map[string]int{}
	for _, f := range fits.fits(t) {
		k := aggregators.WindowKey(f.Aggregate, f.WindowStartUnix)
		if _, dup := byWindow[k]; !dup {
			count[f.Aggregate]++
		}
		byWindow[k] = rel{f.Aggregate, f.Epsilon, f.BudgetRemaining["stream"]}
	}
	if count["km"] != windows || count["weibull"] != windows {
		t.Fatalf("released km %d, weibull %d of %d windows each", count["km"], count["weibull"], windows)
	}
	if n := builds.Load(); n != 2*windows {
		t.Errorf("%d release builds for %d windows, want one each (no fit restarted)", n, 2*windows)
	}
	rels := make([]rel, 0, len(byWindow))
	for _, r := range byWindow {
		rels = append(rels, r)
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].rem > rels[j].rem })
	spent := 0.0
	for i, r := range rels {
		spent += r.eps
		if math.Abs(r.rem-(1e6-spent)) > 1e-6 {
			t.Fatalf("release %d (%s) states %v remaining, want %v", i, r.agg, r.rem, 1e6-spent)
		}
	}
	if s := l.Spent("stream"); math.Abs(s-spent) > 1e-9 {
		t.Errorf("ledger spent %v, releases charged %v", s, spent)
	}
}
