package aggregators_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/survival"
)

// base is aligned to minute windows.
var base = time.Unix(1_700_000_040, 0).UTC()

func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

func key(name string, sec int, cohort string) string {
	return aggregators.MessageKey(name, at(sec).Unix(), cohort)
}

// exactKM is the non-private curve of one cohort of rows.
func exactKM(t *testing.T, rows schemas.Rows, cohort int32) survival.KMCurve {
	t.Helper()
	var tm []float64
	var ev []bool
	for i := range rows.ID {
		if rows.Cohort[i] == cohort {
			tm = append(tm, rows.Time[i])
			ev = append(ev, rows.Event[i])
		}
	}
	c, err := survival.KaplanMeier(tm, ev, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func closeTo(a []aggregators.F, want []float64, tol float64) bool {
	if len(a) != len(want) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i])-want[i]) > tol {
			return false
		}
	}
	return true
}

func TestProcessingTimeWindows(t *testing.T) {
	// epsilon 1e4: the noise (scale 2e-4) is zero with overwhelming
	// probability, so the released counts must be the exact window counts.
	r := newRig(t, at(5), map[string]float64{"stream": 1e6}, kmConfig("km", time.Minute, 1e4))
	w0 := rowsOf("w0", 30)
	r.observe(0, w0)
	if r.tick() || len(r.fits.Messages()) != 0 {
		t.Fatal("a window was closed or released before its end")
	}
	r.clock.Set(at(65))
	w1 := rowsOf("w1", 12)
	r.observe(1, w1)
	if !r.tick() {
		t.Fatal("closing a window did not save a checkpoint first")
	}
	got := r.fits.fits(t)
	if len(got) != len(cohorts) {
		t.Fatalf("%d messages after the first window, want one per cohort: %v", len(got), keys(got))
	}
	for ci, c := range cohorts {
		m, ok := got[key("km", 0, c)]
		if !ok {
			t.Fatalf("no release keyed %s: %v", key("km", 0, c), keys(got))
		}
		want := exactKM(t, w0, int32(ci))
		if !closeTo(m.NEvent, want.NEvent, 1e-9) || !closeTo(m.NRisk, want.NRisk, 1e-9) || !closeTo(m.Surv, want.Surv, 1e-9) {
			t.Errorf("cohort %s: released curve %v/%v/%v, exact %v/%v/%v", c, m.NRisk, m.NEvent, m.Surv, want.NRisk, want.NEvent, want.Surv)
		}
		checks := map[string][2]any{
			"window_start":    {m.WindowStart, at(0).Format(time.RFC3339)},
			"window_end":      {m.WindowEnd, at(60).Format(time.RFC3339)},
			"kind":            {m.Kind, "km"},
			"method":          {m.Method, "noisy-histogram-km"},
			"guarantee":       {m.Guarantee, "pure-dp"},
			"neighbouring":    {m.Neighbouring, km.NeighbouringAddRemove},
			"epsilon":         {m.Epsilon, 1e4},
			"epsilon_charged": {m.EpsilonCharged, 1e4},
			"remaining":       {m.BudgetRemaining["stream"], 1e6 - 1e4},
			"cohort":          {m.Cohort, c},
			"window_time":     {m.WindowTime, "processing"},
			"n":               {float64(m.N), countCohort(w0, int32(ci))},
		}
		for name, v := range checks {
			if v[0] != v[1] {
				t.Errorf("cohort %s: %s = %v, want %v", c, name, v[0], v[1])
			}
		}
		if len(m.Scopes) != 4 || m.Scopes[0] != "stream" || m.Scopes[1] != "aggregate:km" {
			t.Errorf("scopes %v", m.Scopes)
		}
	}
	// Window 1 holds exactly the records read while the clock was in it;
	// window 2 gets none and is released all the same (whether a window is
	// released must not depend on the data).
	r.clock.Set(at(125))
	r.tick()
	r.clock.Set(at(185))
	r.tick()
	got = r.fits.fits(t)
	if n := float64(got[key("km", 60, "A")].N) + float64(got[key("km", 60, "B")].N); n != 12 {
		t.Fatalf("window 1 released n = %v, want 12", n)
	}
	for _, c := range cohorts {
		m, ok := got[key("km", 120, c)]
		if !ok || m.N != 0 {
			t.Fatalf("empty window 2, cohort %s: released %v, n %v", c, ok, m.N)
		}
	}
	if v := metric(t, r.reg, "dpsurv_releases_total", map[string]string{"aggregate": "km"}); v != 3 {
		t.Fatalf("releases metric %v, want 3", v)
	}
	if v := metric(t, r.reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"}); v != 42 {
		t.Fatalf("records metric %v, want 42", v)
	}
}

func countCohort(rows schemas.Rows, c int32) float64 {
	n := 0.0
	for _, x := range rows.Cohort {
		if x == c {
			n++
		}
	}
	return n
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestEventTimeLatenessAndLateRecords(t *testing.T) {
	cfg := kmConfig("ev", time.Minute, 1e4)
	cfg.Window.Time = aggregators.TimeEvent
	cfg.Window.Lateness = 30 * time.Second
	r := newRig(t, at(61), map[string]float64{"stream": 1e6}, cfg)
	withObs := func(p string, n int, sec int) schemas.Rows {
		rows := rowsOf(p, n)
		for range n {
			rows.ObservedAt = append(rows.ObservedAt, at(sec))
		}
		return rows
	}
	r.observe(0, withObs("a", 8, 10))    // window 0, still open (lateness)
	r.observe(1, withObs("b", 5, 70))    // window 1
	r.observe(2, withObs("c", 3, 200))   // window 3: has not started by our clock
	r.observe(3, rowsOf("d", 4))         // no observed_at column
	r.observe(4, withObs("e", 2, -3600)) // long closed
	if len(r.fits.Messages()) != 0 {
		t.Fatal("released early")
	}
	r.clock.Set(at(89))
	r.tick()
	if len(r.fits.Messages()) != 0 {
		t.Fatal("window 0 released before end + lateness")
	}
	r.clock.Set(at(90))
	r.tick()
	got := r.fits.fits(t)
	if n := float64(got[key("ev", 0, "A")].N) + float64(got[key("ev", 0, "B")].N); n != 8 {
		t.Fatalf("window 0 n = %v, want 8 (%v)", n, keys(got))
	}
	r.observe(5, withObs("f", 6, 30)) // window 0 again: closed now
	want := map[string]float64{
		"late":   8, // e (2) + f (6)
		"no_obs": 4,
		"future": 3,
	}
	gotM := map[string]float64{
		"late":   metric(t, r.reg, "dpsurv_aggregator_late_records_total", map[string]string{"aggregate": "ev"}),
		"no_obs": metric(t, r.reg, "dpsurv_aggregator_records_skipped_total", map[string]string{"aggregate": "ev", "reason": "no_observed_at"}),
		"future": metric(t, r.reg, "dpsurv_aggregator_records_skipped_total", map[string]string{"aggregate": "ev", "reason": "future_observed_at"}),
	}
	for k, v := range want {
		if gotM[k] != v {
			t.Errorf("%s = %v, want %v", k, gotM[k], v)
		}
	}
	r.clock.Set(at(150))
	r.tick()
	got = r.fits.fits(t)
	if n := float64(got[key("ev", 60, "A")].N) + float64(got[key("ev", 60, "B")].N); n != 5 {
		t.Fatalf("window 1 n = %v, want 5", n)
	}
	if m := got[key("ev", 60, "A")]; m.WindowTime != "event" || m.LatenessSeconds != 30 {
		t.Fatalf("window metadata: time %q lateness %v", m.WindowTime, m.LatenessSeconds)
	}
}

func TestBudgetWithholdsAndKeepsRunning(t *testing.T) {
	tests := []struct {
		name         string
		budget       map[string]float64
		wantReleased int // windows
		wantRemain   map[string]float64
	}{
		{"stream", map[string]float64{"stream": 2.5}, 2, map[string]float64{"stream": 0.5}},
		{"cohort", map[string]float64{"stream": 100, "cohort:B": 1}, 1, map[string]float64{"stream": 99, "cohort:B": 0}},
		{"aggregate", map[string]float64{"stream": 100, "aggregate:km": 3}, 3, map[string]float64{"aggregate:km": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, at(1), tc.budget, kmConfig("km", time.Minute, 1))
			for w := range 5 {
				r.clock.Set(at(60*w + 1))
				r.observe(int64(w), rowsOf("w", 10))
				r.tick()
			}
			r.clock.Set(at(60*5 + 1))
			r.tick()
			got := r.fits.fits(t)
			if len(got) != tc.wantReleased*len(cohorts) {
				t.Fatalf("%d messages, want %d windows x %d cohorts: %v", len(got), tc.wantReleased, len(cohorts), keys(got))
			}
			if v := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "km", "reason": "budget_exceeded"}); v != float64(5-tc.wantReleased) {
				t.Fatalf("withheld %v, want %d", v, 5-tc.wantReleased)
			}
			for s, want := range tc.wantRemain {
				if got, _ := r.led.Remaining(s); math.Abs(got-want) > 1e-9 {
					t.Errorf("remaining %s = %v, want %v", s, got, want)
				}
			}
			// The stream keeps being counted after the refusals.
			r.observe(10, rowsOf("late", 3))
			if v := metric(t, r.reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"}); v != 53 {
				t.Fatalf("records counted %v, want 53", v)
			}
		})
	}
}

// A crash after the ledger stored a window's release but before it reached
// the fit topic: the restarted engine re-emits the stored bytes and draws
// no noise for it.
func TestCrashAfterReleaseReemitsWithoutNoise(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 10}, kmConfig("km", time.Minute, 1))
	r.observe(0, rowsOf("a", 40))
	r.fits.Fail = errors.New("broker down")
	r.clock.Set(at(61))
	r.tick()
	stored, ok := r.led.Lookup(aggregators.WindowKey("km", at(0).Unix()))
	if !ok {
		t.Fatal("window not in the ledger")
	}
	if len(r.fits.Messages()) != 0 {
		t.Fatal("published through a failing sink")
	}
	// Crash: no further checkpoint. Restart over the same ledger and state.
	r.fits.Fail = nil
	r.start(99)
	r.tick()
	if n := r.noise.n.Load(); n != 0 {
		t.Fatalf("the restarted engine drew %d random words for a window already released", n)
	}
	var doc struct {
		Messages []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(stored, &doc); err != nil {
		t.Fatal(err)
	}
	msgs := r.fits.Messages()
	if len(msgs) != len(doc.Messages) {
		t.Fatalf("%d messages published, %d stored", len(msgs), len(doc.Messages))
	}
	for i, m := range msgs {
		if string(m.Key) != doc.Messages[i].Key || !bytes.Equal(m.Value, doc.Messages[i].Value) {
			t.Fatalf("published message %d differs from the stored release", i)
		}
	}
	if v := metric(t, r.reg, "dpsurv_releases_replayed_total", map[string]string{"aggregate": "km"}); v != 1 {
		t.Fatalf("replayed metric %v", v)
	}
	if got := r.led.Spent("stream"); got != 1 {
		t.Fatalf("spent %v after replay, want 1", got)
	}
	// A second restart after publication but before the next checkpoint
	// publishes again: the duplicate is byte-identical.
	r.start(7)
	r.tick()
	all := r.fits.Messages()
	if len(all) != 2*len(msgs) {
		t.Fatalf("%d messages after the second restart", len(all))
	}
	for i := range msgs {
		if !bytes.Equal(all[i].Value, all[i+len(msgs)].Value) {
			t.Fatal("a re-published release differs")
		}
	}
	if r.led.Len() != 1 {
		t.Fatalf("ledger holds %d entries, want 1", r.led.Len())
	}
}

// A crash after the window's counts were checkpointed but before the
// ledger stored its release: the restarted engine draws the release once.
func TestCrashBeforeReleaseDrawsOnce(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, kmConfig("km", time.Minute, 1e4))
	r.observe(0, rowsOf("a", 40))
	r.backend.FailAppend = errors.New("disk gone")
	r.clock.Set(at(61))
	if !r.tick() {
		t.Fatal("no checkpoint before the release")
	}
	if r.led.Len() != 0 || len(r.fits.Messages()) != 0 {
		t.Fatal("released without a durable ledger entry")
	}
	r.backend.FailAppend = nil
	r.start(5)
	r.tick()
	got := r.fits.fits(t)
	if n := float64(got[key("km", 0, "A")].N) + float64(got[key("km", 0, "B")].N); n != 40 {
		t.Fatalf("released n = %v after restart, want 40", n)
	}
	if r.noise.n.Load() == 0 || r.led.Len() != 1 {
		t.Fatalf("draws %d, ledger entries %d: want one fresh release", r.noise.n.Load(), r.led.Len())
	}
}

// Messages already counted in the checkpoint are skipped when the consumer
// re-reads them (a lost offset commit): each record counts once.
func TestCheckpointOffsetsCountEachRecordOnce(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, kmConfig("km", time.Minute, 1e4))
	for off := range 4 {
		r.observe(int64(off), rowsOf("a"+string(rune('0'+off)), 10))
	}
	if err := r.eng.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.observe(4, rowsOf("a4", 10))
	r.observe(5, rowsOf("a5", 10))
	r.start(2) // crash: offsets 4 and 5 not in the checkpoint
	for off := range 6 {
		if skip := r.eng.Skip(0, int64(off)); skip != (off < 4) {
			t.Fatalf("Skip(%d) = %v", off, skip)
		}
		r.observe(int64(off), rowsOf("a"+string(rune('0'+off)), 10)) // redelivered from offset 0
	}
	r.clock.Set(at(61))
	r.tick()
	got := r.fits.fits(t)
	if n := float64(got[key("km", 0, "A")].N) + float64(got[key("km", 0, "B")].N); n != 60 {
		t.Fatalf("released n = %v, want 60 (each record once)", n)
	}
	if v := metric(t, r.reg, "dpsurv_aggregator_redelivered_skipped_total", nil); v != 4 {
		t.Fatalf("redelivered metric %v, want 4", v)
	}
}

func TestCumulativeChargedOnceForTheHorizon(t *testing.T) {
	cfg := kmConfig("cum", time.Minute, 1e4)
	cfg.Window.Cumulative, cfg.Window.Horizon = true, 4
	r := newRig(t, at(1), map[string]float64{"stream": 1e4}, cfg) // exactly one charge
	for w := range 6 {
		r.clock.Set(at(60*w + 1))
		// new patients each window: a patient is counted once per horizon
		// (TestCumulativeOnePatientOneContributionPerHorizon)
		r.observe(int64(w), rowsOf("w"+strconv.Itoa(w), 10))
		r.tick()
		if w == 2 {
			// Crash and restart mid-stream: the tree counter's state
			// (drawn noise included) comes back from the checkpoint.
			r.start(123)
		}
	}
	r.clock.Set(at(60*6 + 1))
	r.tick()
	got := r.fits.fits(t)
	for w := range 4 {
		m, ok := got[key("cum", 60*w, "A")]
		if !ok {
			t.Fatalf("window %d not released: %v", w, keys(got))
		}
		n := float64(m.N) + float64(got[key("cum", 60*w, "B")].N)
		if m.ReleaseIndex != w+1 || m.Horizon != 4 || !m.Cumulative || m.EpsilonCharged != 0 || n != float64(10*(w+1)) {
			t.Fatalf("window %d: index %d horizon %d cumulative %v charged %v n %v", w, m.ReleaseIndex, m.Horizon, m.Cumulative, m.EpsilonCharged, n)
		}
		if m.Method != "tree-counter-km" || m.Epsilon != 1e4 {
			t.Fatalf("window %d: method %s epsilon %v", w, m.Method, m.Epsilon)
		}
	}
	if _, ok := got[key("cum", 240, "A")]; ok {
		t.Fatal("released beyond the horizon")
	}
	if got := r.led.Spent("stream"); got != 1e4 {
		t.Fatalf("stream spent %v, want one charge of 1e4", got)
	}
	if v := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "cum", "reason": "horizon_reached"}); v != 2 {
		t.Fatalf("horizon withheld %v, want 2 (windows 5 and 6, after the restart)", v)
	}
}

func TestCumulativeRefusedChargeWithholds(t *testing.T) {
	cfg := kmConfig("cum", time.Minute, 2)
	cfg.Window.Cumulative, cfg.Window.Horizon = true, 8
	r := newRig(t, at(1), map[string]float64{"stream": 1}, cfg)
	r.tick() // registers window 0
	r.clock.Set(at(61))
	r.tick()
	r.clock.Set(at(121))
	r.tick()
	if len(r.fits.Messages()) != 0 || r.noise.n.Load() != 0 {
		t.Fatal("a refused cumulative aggregate drew noise or published")
	}
	if v := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "cum", "reason": "budget_exceeded"}); v != 2 {
		t.Fatalf("withheld %v", v)
	}
}

func TestChangedConfigurationIsRefused(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 10}, kmConfig("km", time.Minute, 1))
	r.observe(0, rowsOf("a", 5))
	if err := r.eng.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	changed := kmConfig("km", time.Minute, 2)
	_, err := aggregators.NewEngine(context.Background(), aggregators.EngineConfig{
		Aggregates: []aggregators.Config{changed}, Topic: "in", Ledger: r.led, State: r.state, Fits: r.fits,
		Clock: r.clock, Noise: r.noise})
	if err == nil || !strings.Contains(err.Error(), "configuration changed") {
		t.Fatalf("changed epsilon under the same name accepted: %v", err)
	}
	_, err = aggregators.NewEngine(context.Background(), aggregators.EngineConfig{
		Aggregates: []aggregators.Config{kmConfig("km", time.Minute, 1)}, Topic: "other", Ledger: r.led, State: r.state, Fits: r.fits,
		Clock: r.clock, Noise: r.noise})
	if err == nil {
		t.Fatal("a checkpoint of another input topic was accepted")
	}
}

// The released n of a cohort is N_hat = the sum of its 2 x bins noisy cells
// (never clamped here: the true n is 50 and the noise SD about 12.5). Its
// error must have mean 0 and the variance 2 x bins x Var(DL(1/epsilon))
// (add/remove-one: cell sensitivity 1) —
// a wrongly wired epsilon (say epsilon/2, 4.3 times the variance, or
// 2 epsilon, 0.17 times) fails.
// 200 samples (100 windows: 300 cost three times the CPU under -race for
// no power the alternatives need): the mean within 4 standard errors, the
// variance ratio within [0.6, 1.5], which is about 4.4 standard errors of
// the sample variance on either side (Wilson-Hilferty for 199 degrees of
// freedom, the sum of 20 DL cells being close to normal: excess kurtosis
// 0.15); false-alarm rate about 1e-4 for this fixed seed's test.
func TestWindowNoiseMatchesEpsilon(t *testing.T) {
	const eps, windows = 1.0, 100
	cfg := kmConfig("km", time.Minute, eps)
	setParams(&cfg, func(p *aggregators.KMParams) { p.LogRankSims, p.IntervalSims = -1, -1 }) // 200 releases: no simulations
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, cfg)
	rows := rowsOf("x", 100)
	for w := range windows {
		r.clock.Set(at(60*w + 1))
		r.observe(int64(w), rows)
		r.tick()
	}
	r.clock.Set(at(60*windows + 1))
	r.tick()
	var errs []float64
	for _, m := range r.fits.fits(t) {
		errs = append(errs, float64(m.N)-50)
	}
	if len(errs) != 2*windows {
		t.Fatalf("%d releases", len(errs))
	}
	mean, v := 0.0, 0.0
	for _, e := range errs {
		mean += e
	}
	mean /= float64(len(errs))
	for _, e := range errs {
		v += (e - mean) * (e - mean)
	}
	v /= float64(len(errs) - 1)
	a := math.Exp(-eps / km.KMCellSensitivity)
	want := 2 * 10 * 2 * a / ((1 - a) * (1 - a)) // 20 cells (10 bins x events, censorings)
	if se := math.Sqrt(want / float64(len(errs))); math.Abs(mean) > 4*se {
		t.Errorf("mean error %v, want 0 ± %v", mean, 4*se)
	}
	if ratio := v / want; ratio < 0.6 || ratio > 1.5 {
		t.Errorf("noise variance %v, want %v (ratio %v)", v, want, ratio)
	}
	t.Logf("n error over %d releases: mean %.3f, variance %.1f (theory %.1f)", len(errs), mean, v, want)
}

func TestWeibullAggregate(t *testing.T) {
	cfg := aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: 1e3,
		Cohorts: cohorts, TimeMax: 100, TimeUnit: "days", Params: aggregators.WeibullParams{IntervalSims: -1}} // intervals: TestWeibullAggregateIntervals
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, cfg)
	var rows schemas.Rows
	for i := range 2000 {
		rows.ID = append(rows.ID, "p"+string(rune('a'+i%26))+time.Duration(i).String())
		// Weibull-ish: shape about 1.5, scale 40 days, deterministic quantiles.
		u := (float64(i%1000) + 0.5) / 1000
		rows.Time = append(rows.Time, math.Round(40*math.Pow(-math.Log(1-u), 1/1.5)))
		rows.Event = append(rows.Event, i%5 != 0)
		rows.Cohort = append(rows.Cohort, int32(i%2))
	}
	eventsBy100 := 0
	for i, ev := range rows.Event {
		if ev && rows.Time[i] <= 100 {
			eventsBy100++
		}
	}
	if eventsBy100 > 1580 || eventsBy100 < 1500 {
		t.Fatalf("%d events up to time_max; the data should put a few past it", eventsBy100)
	}
	r.observe(0, rows)
	r.clock.Set(at(61))
	r.tick()
	got := r.fits.fits(t)
	for _, c := range cohorts {
		m, ok := got[key("wb", 0, c)]
		if !ok || m.WeibullFields == nil {
			t.Fatalf("no weibull release for %s", c)
		}
		if m.Method != "lsp" || m.Guarantee != "pure-dp" || m.Neighbouring != aggregators.NeighbouringAddRemoveInCohort {
			t.Fatalf("metadata: %s %s %s", m.Method, m.Guarantee, m.Neighbouring)
		}
		// add/remove-one: the record count is protected, so it is not in
		// the public list; the shape lies on the public grid
		if slices.ContainsFunc(m.Public, func(s string) bool { return strings.HasPrefix(s, "n") }) || len(m.Public) == 0 {
			t.Fatalf("public %v", m.Public)
		}
		if g := m.Params["shape_grid"]; !(g > 0) || math.Abs(float64(m.Shape)/g-math.Round(float64(m.Shape)/g)) > 1e-6 {
			t.Errorf("shape %v not on the grid %v", m.Shape, g)
		}
		// Large epsilon: near the non-private fit (shape ~1.5, scale ~0.4
		// in units of time_max, slightly biased by 1-day bins and censoring).
		if s := float64(m.Shape); s < 1.2 || s > 1.9 {
			t.Errorf("cohort %s: shape %v, want about 1.5", c, s)
		}
		if sc := float64(m.Scale); sc < 0.3 || sc > 0.55 {
			t.Errorf("cohort %s: scale %v, want about 0.4", c, sc)
		}
		// Events after time_max (100 days) are censored at the horizon:
		// not counted (about 16 of the 800 per cohort).
		if math.Abs(float64(m.N)-float64(eventsBy100)/2) > 5 {
			t.Errorf("cohort %s: noisy event count %v, want about %v (events up to time_max)", c, m.N, eventsBy100/2)
		}
	}
}

func TestCurveTable(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 10}, kmConfig("km", time.Minute, 1))
	r.observe(0, rowsOf("a", 200))
	r.clock.Set(at(61))
	r.tick()
	msgs := r.fits.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tab, err := aggregators.CurveTable(msgs[0].Value, mem)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := aggregators.CurveTable(msgs[0].Value, mem)
	if !bytes.Equal(tab, again) {
		t.Fatal("curve table is not deterministic")
	}
	var f aggregators.FitMessage
	json.Unmarshal(msgs[0].Value, &f)
	recs := decodeTable(t, tab, mem)
	defer releaseAll(recs)
	rec := recs[0]
	if v, _ := rec.Schema().Metadata().GetValue("dpsurv.key"); v != f.Key {
		t.Fatalf("metadata key %q, want %q", v, f.Key)
	}
	if int(rec.NumRows()) != len(f.Time) {
		t.Fatalf("%d rows, %d times", rec.NumRows(), len(f.Time))
	}
	surv := rec.Column(4).(*array.Float64)
	for i := range f.Surv {
		if surv.Value(i) != float64(f.Surv[i]) {
			t.Fatalf("surv[%d] = %v, JSON %v", i, surv.Value(i), f.Surv[i])
		}
	}
}

func TestConfigValidation(t *testing.T) {
	ok := kmConfig("ok", time.Minute, 1)
	tests := []struct {
		name string
		mut  func(*aggregators.Config)
		want string
	}{
		{"valid", func(*aggregators.Config) {}, ""},
		{"discrete without covariates", func(c *aggregators.Config) { c.Kind, c.Params = "discrete", nil }, "params.covariates: required"},
		{"unknown kind", func(c *aggregators.Config) { c.Kind = "cox" }, "not km, weibull or discrete"},
		{"sub-second window", func(c *aggregators.Config) { c.Window.Size = 1500 * time.Millisecond }, "whole number of seconds"},
		{"too much lateness", func(c *aggregators.Config) { c.Window.Lateness = 2 * time.Hour }, "at most 64 windows"},
		{"cumulative weibull", func(c *aggregators.Config) { c.Kind, c.Window.Cumulative, c.Window.Horizon = "weibull", true, 4 }, "only km"},
		{"cumulative without horizon", func(c *aggregators.Config) { c.Window.Cumulative = true }, "horizon"},
		{"slash in name", func(c *aggregators.Config) { c.Name = "a/b" }, "without '/'"},
		{"bad event mode", func(c *aggregators.Config) { c.Window.Time = "wall" }, "window.time"},
		{"too many bins", func(c *aggregators.Config) { c.TimeMax = 1e9 }, "too many cells"},
		{"km method", func(c *aggregators.Config) { setParams(c, func(p *aggregators.KMParams) { p.Method = "lnte" }) }, "params.method"},
		{"weibull params for km", func(c *aggregators.Config) { c.Params = aggregators.WeibullParams{} }, "params: aggregators.WeibullParams are not the params of kind km"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mut(&c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := aggregators.ParseParams("km", map[string]any{"bin_width": 7, "conf": 0.9}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []map[string]any{{"omega": 3}, {"bin_width": "wide"}, {"rungs": 2.5, "method": "lsp"}} {
		kind := "km"
		if _, ok := bad["rungs"]; ok {
			kind = "weibull"
		}
		if _, err := aggregators.ParseParams(kind, bad); err == nil {
			t.Fatalf("params %v accepted", bad)
		}
	}
}

// The default km method is the hierarchical one; at a huge epsilon its
// release is the exact curve of the window.
func TestHierarchicalDefault(t *testing.T) {
	cfg := kmConfig("h", time.Minute, 1e4)
	setParams(&cfg, func(p *aggregators.KMParams) { p.Method = "" })
	r := newRig(t, at(1), map[string]float64{"stream": 1e6}, cfg)
	rows := rowsOf("h", 90)
	r.observe(0, rows)
	r.clock.Set(at(61))
	r.tick()
	got := r.fits.fits(t)
	for ci, c := range cohorts {
		m := got[key("h", 0, c)]
		want := exactKM(t, rows, int32(ci))
		if m.Method != "hierarchical-histogram-km" || m.Guarantee != "pure-dp" || m.Neighbouring != km.NeighbouringAddRemove {
			t.Fatalf("cohort %s: method %q guarantee %q neighbouring %q", c, m.Method, m.Guarantee, m.Neighbouring)
		}
		if !closeTo(m.NEvent, want.NEvent, 1e-6) || !closeTo(m.Surv, want.Surv, 1e-6) {
			t.Fatalf("cohort %s: released %v/%v, exact %v/%v", c, m.NEvent, m.Surv, want.NEvent, want.Surv)
		}
	}
}
