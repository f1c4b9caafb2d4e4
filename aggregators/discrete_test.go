package aggregators_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/regression"
	"github.com/dpsurv/dpsurv/schemas"
)

// The input's covariates (schema order) and the model's (params order).
var (
	discSchemaCovs = []string{"score", "other", "age"}
	discModelCovs  = []string{"age", "score"}
	discCentre     = []float64{60, 0}
	discScale      = []float64{20, 1}
)

const (
	discTimeMax   = 100.0
	discIntervals = 20
)

func discConfig(name string, eps float64, method string) aggregators.Config {
	return aggregators.Config{Name: name, Kind: aggregators.KindDiscrete, Window: aggregators.Window{Size: time.Minute}, Epsilon: eps,
		Cohorts: cohorts, TimeMax: discTimeMax, TimeUnit: "days", Covariates: discSchemaCovs,
		Params: aggregators.DiscreteParams{Method: method, Covariates: discModelCovs, Centre: discCentre, Scale: discScale, Intervals: discIntervals}}
}

// discRows draws n records from a discrete-time-ish model with two
// covariates that matter (age raises the hazard, score lowers it) and one
// that the model ignores. Times are integers in [1, 120] (some above
// time_max: censored there), about a quarter censored.
func discRows(p string, n int, seed uint64) schemas.Rows {
	src := dp.NewSeededSource(seed)
	var r schemas.Rows
	score, other, age := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		age[i] = 40 + 40*dp.Float64(src)
		score[i] = 2*dp.Float64(src) - 1
		other[i] = 100 * dp.Float64(src)
		rate := 0.02 * math.Exp(1.2*(age[i]-60)/20-0.8*score[i])
		t := math.Ceil(-math.Log(1-dp.Float64(src)) / rate)
		c := math.Ceil(-math.Log(1-dp.Float64(src)) * 150)
		r.ID = append(r.ID, fmt.Sprintf("%s-%d", p, i))
		r.Time = append(r.Time, math.Min(math.Min(t, c), 120))
		r.Event = append(r.Event, t <= c && t <= 120)
		r.Cohort = append(r.Cohort, int32(i%len(cohorts)))
	}
	r.Covariates = [][]float64{score, other, age}
	return r
}

func discSpec() schemas.Spec {
	return schemas.Spec{Cohorts: cohorts, TimeUnit: "days", Covariates: discSchemaCovs, Columns: schemas.DefaultColumns()}
}

func (r *rig) observeDisc(offset int64, rows schemas.Rows) {
	r.t.Helper()
	rec, err := schemas.BuildCanonical(discSpec(), rows, memory.DefaultAllocator)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rec.Release()
	if err := r.eng.Observe(0, offset, rec); err != nil {
		r.t.Fatal(err)
	}
}

// concatRows appends rows b to a.
func concatRows(a, b schemas.Rows) schemas.Rows {
	out := schemas.Rows{ID: append(append([]string{}, a.ID...), b.ID...), Time: append(append([]float64{}, a.Time...), b.Time...),
		Event: append(append([]bool{}, a.Event...), b.Event...), Cohort: append(append([]int32{}, a.Cohort...), b.Cohort...)}
	if a.Covariates == nil {
		return schemas.Rows{ID: b.ID, Time: b.Time, Event: b.Event, Cohort: b.Cohort, Covariates: b.Covariates}
	}
	for k := range a.Covariates {
		out.Covariates = append(out.Covariates, append(append([]float64{}, a.Covariates[k]...), b.Covariates[k]...))
	}
	return out
}

// ridgeMLE is the exact minimiser of Ext-Out-Pert's objective J (the ridge
// MLE) on the raw rows with the aggregate's public scaling: what a release
// at a huge epsilon must be close to (lambda 0: the plain MLE, newton's
// target).
func ridgeMLE(t *testing.T, rows schemas.Rows, lambda float64) regression.DiscreteResult {
	t.Helper()
	x := make([][]float64, len(rows.ID))
	for i := range x {
		x[i] = []float64{rows.Covariates[2][i], rows.Covariates[0][i]} // age, score
	}
	res, err := regression.FitDiscrete(regression.Data{Time: rows.Time, Event: rows.Event, X: x}, regression.DiscreteOptions{
		Method: regression.MethodMLE, Ridge: lambda > 0, Lambda: lambda, Intervals: discIntervals, TimeMax: discTimeMax,
		Scaling: regression.Scaling{Centre: discCentre, Scale: discScale}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func maxAbsDiff(got []aggregators.F, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range got {
		d = math.Max(d, math.Abs(float64(got[i])-want[i]))
	}
	return d
}

// One release per window (key <name>/<start>/all, pooled cohorts), the
// method's guarantee label, the ledger charged once per window; at a huge
// epsilon output and objective perturbation release (within 1e-4) the
// ridge MLE of exactly the window's records, and n exactly.
func TestDiscreteAggregateReleases(t *testing.T) {
	tests := []struct {
		method, guarantee string
		tol               float64 // vs the ridge MLE; NaN: not compared
	}{
		{"newton", regression.GuaranteePureDP, 5e-3}, // 5 steps: the weakly determined alpha_3 within 2e-3
		{"output", regression.GuaranteePureDPCertified, 1e-4},
		{"objective", regression.GuaranteeObjective, 1e-4},
		{"psgld", "approximate (mcmc)", math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			cfg := discConfig("dt", 1e6, tc.method)
			if tc.method == "psgld" {
				// 1,000 steps (was 3,000: 6.9 s of the test's 8.9 s under
				// -race): over 20 noise seeds x 2 windows, 500 steps
				// already gave age 1.19-1.25 and score -0.73 to -0.97,
				// far from the zero the sign check below guards.
				setParams(&cfg, func(p *aggregators.DiscreteParams) { p.Steps = 1000 })
			}
			r := newRig(t, at(1), map[string]float64{"stream": 1e7}, cfg)
			w0a, w0b, w1 := discRows("a", 250, 1), discRows("b", 150, 2), discRows("c", 300, 3)
			r.observeDisc(0, w0a)
			r.observeDisc(1, w0b)
			if r.tick(); len(r.fits.Messages()) != 0 {
				t.Fatal("released before the window closed")
			}
			r.clock.Set(at(61))
			r.observeDisc(2, w1)
			if !r.tick() {
				t.Fatal("closing a window did not save a checkpoint first")
			}
			r.clock.Set(at(121))
			r.tick()
			msgs := r.fits.Messages()
			if len(msgs) != 2 {
				t.Fatalf("%d messages for 2 windows, want one per window", len(msgs))
			}
			got := r.fits.fits(t)
			for w, rows := range []schemas.Rows{concatRows(w0a, w0b), w1} {
				k := aggregators.MessageKey("dt", at(60*w).Unix(), "all")
				m, ok := got[k]
				if !ok || m.DiscreteFields == nil {
					t.Fatalf("window %d: no discrete release keyed %s: %v", w, k, keys(got))
				}
				// psgld publishes no limits, so spends nothing on an interval release
				wantFit := 1e6 * (1 - regression.DefaultIntervalFraction)
				if tc.method == "psgld" || tc.method == "newton" {
					wantFit = 1e6
				}
				checks := map[string][2]any{
					"kind":            {m.Kind, "discrete"},
					"cohort":          {m.Cohort, "all"},
					"method":          {m.Method, tc.method},
					"guarantee":       {m.Guarantee, tc.guarantee},
					"neighbouring":    {m.Neighbouring, aggregators.NeighbouringDiscrete},
					"epsilon":         {m.Epsilon, 1e6},
					"epsilon_charged": {m.EpsilonCharged, 1e6},
					"remaining":       {m.BudgetRemaining["stream"], 1e7 - float64(w+1)*1e6},
					"window_start":    {m.WindowStart, at(60 * w).Format(time.RFC3339)},
					"window_end":      {m.WindowEnd, at(60*w + 60).Format(time.RFC3339)},
					"n":               {float64(m.N), float64(len(rows.ID))},
					"alpha":           {len(m.Alpha), 3},
					"beta":            {len(m.Beta), 2},
					"covariates":      {strings.Join(m.Covariates, ","), "age,score"},
					"intervals":       {m.Intervals, discIntervals},
					"time_max":        {m.TimeMax, discTimeMax},
					"eps fit":         {m.EpsilonFit, wantFit},
					"eps split":       {m.EpsilonFit + m.EpsilonInterval, 1e6},
					"public n":        {len(m.Public) > 0 && m.Public[0] == "n", true},
					"scopes":          {strings.Join(m.Scopes, ","), "stream,aggregate:dt,cohort:A,cohort:B"},
				}
				for name, v := range checks {
					if v[0] != v[1] {
						t.Errorf("window %d: %s = %v, want %v", w, name, v[0], v[1])
					}
				}
				var raw map[string]any
				if err := json.Unmarshal(msgs[w].Value, &raw); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"epsilon_count", "bin_width", "time", "shape"} {
					if _, ok := raw[f]; ok {
						t.Errorf("window %d: release carries %q", w, f)
					}
				}
				if tc.method == "newton" {
					// the default method: limits of every coefficient, se,
					// z, p and hazard (odds) ratios; no lambda
					for _, f := range []string{"alpha_lower", "alpha_upper", "beta_lower", "beta_upper", "alpha_se", "beta_se", "beta_z", "beta_p", "hazard_ratio", "hazard_ratio_lower", "hazard_ratio_upper", "newton", "newton_steps", "newton_start"} {
						if _, ok := raw[f]; !ok {
							t.Errorf("window %d: newton release lacks %q", w, f)
						}
					}
					if _, ok := raw["lambda"]; ok || m.DiscreteFields.IntervalMethod != regression.IntervalNewton {
						t.Errorf("window %d: lambda published %v, interval method %q", w, ok, m.DiscreteFields.IntervalMethod)
					}
				}
				lambda := regression.DefaultLambda
				if tc.method == "newton" {
					lambda = 0
				}
				ref := ridgeMLE(t, rows, lambda)
				da, db := maxAbsDiff(m.Alpha, ref.Alpha), maxAbsDiff(m.Beta, ref.Beta)
				if !math.IsNaN(tc.tol) && (da > tc.tol || db > tc.tol) {
					t.Errorf("window %d: released alpha %v beta %v; ridge MLE %v %v (max diff %.2g, %.2g)", w, m.Alpha, m.Beta, ref.Alpha, ref.Beta, da, db)
				}
				// pSGLD targets the minimiser of sum C_v(l) and samples around
				// it: check the covariate effects' signs only (age +, score -).
				if tc.method == "psgld" && !(m.Beta[0] > 0 && m.Beta[1] < 0) {
					t.Errorf("window %d: psgld beta %v, want age > 0 > score (ridge MLE %v)", w, m.Beta, ref.Beta)
				}
				t.Logf("window %d (%s): beta %.4f %.4f, ridge MLE %.4f %.4f", w, tc.method, m.Beta[0], m.Beta[1], ref.Beta[0], ref.Beta[1])
			}
			if got := r.led.Spent("stream"); got != 2e6 {
				t.Fatalf("stream spent %v, want 2 windows x 1e6", got)
			}
			if r.led.Len() != 2 {
				t.Fatalf("ledger holds %d entries, want 2", r.led.Len())
			}
			if v := metric(t, r.reg, "dpsurv_releases_total", map[string]string{"aggregate": "dt"}); v != 2 {
				t.Fatalf("releases metric %v", v)
			}
			if v := metric(t, r.reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "dt"}); v != 700 {
				t.Fatalf("records metric %v, want 700", v)
			}
			if v := metric(t, r.reg, "dpsurv_aggregator_values_clamped_total", map[string]string{"aggregate": "dt"}); v == 0 {
				t.Fatal("no clamped values counted (rows outside the unit ball exist)")
			}
			if v := metric(t, r.reg, "dpsurv_aggregator_censored_at_horizon_total", map[string]string{"aggregate": "dt"}); v == 0 {
				t.Fatal("no records censored at the horizon counted (times above 100 days exist)")
			}
		})
	}
}

// Over-budget windows are withheld before any noise is drawn and the
// stream keeps being counted; empty windows and windows of one record are
// released all the same, in the same shape.
func TestDiscreteBudgetAndEmptyWindows(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 2.5}, discConfig("dt", 1, "output"))
	sizes := []int{0, 1, 40, 40}
	for w, n := range sizes {
		r.clock.Set(at(60*w + 1))
		if n > 0 {
			r.observeDisc(int64(w), discRows(fmt.Sprint("w", w), n, uint64(w)))
		}
		r.tick()
	}
	r.clock.Set(at(60*len(sizes) + 1))
	drawsBefore := r.noise.n.Load()
	r.tick()
	got := r.fits.fits(t)
	if len(got) != 2 {
		t.Fatalf("%d releases with budget for 2: %v", len(got), keys(got))
	}
	if r.noise.n.Load() != drawsBefore {
		t.Fatal("a withheld window drew noise")
	}
	for w := range 2 {
		m, ok := got[aggregators.MessageKey("dt", at(60*w).Unix(), "all")]
		if !ok || len(m.Alpha) != 3 || len(m.Beta) != 2 || m.Guarantee != regression.GuaranteePureDPCertified {
			t.Fatalf("window %d (%d records): released %v, alpha %v beta %v guarantee %q", w, sizes[w], ok, m.Alpha, m.Beta, m.Guarantee)
		}
		// n is public: exact; the release is the fixed fallback, on the
		// noise grid, with the noise it was drawn with stated
		if float64(m.N) != float64(sizes[w]) || !m.Fallback || m.Noise == nil {
			t.Fatalf("window %d: n %v fallback %v noise %+v", w, m.N, m.Fallback, m.Noise)
		}
		// no Hessian: epsilon_interval is charged, stated as unspent
		if m.EpsilonInterval <= 0 || m.Hessians != nil || m.DiscreteFields.IntervalMethod != regression.IntervalNone+regression.IntervalUnspentNote {
			t.Fatalf("window %d: epsilon_interval %v, %d hessians, %q", w, m.EpsilonInterval, len(m.Hessians), m.DiscreteFields.IntervalMethod)
		}
		for _, v := range append(append([]aggregators.F{}, m.Alpha...), m.Beta...) {
			if q := float64(v) / m.Noise.Grid; q != math.Trunc(q) {
				t.Fatalf("window %d: coefficient %v not on the grid %v", w, v, m.Noise.Grid)
			}
		}
		for _, v := range append(append([]aggregators.F{}, m.Alpha...), m.Beta...) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("window %d: non-finite coefficient", w)
			}
		}
	}
	if v := metric(t, r.reg, "dpsurv_releases_withheld_total", map[string]string{"aggregate": "dt", "reason": "budget_exceeded"}); v != 2 {
		t.Fatalf("withheld %v, want 2", v)
	}
	if got, _ := r.led.Remaining("stream"); math.Abs(got-0.5) > 1e-12 {
		t.Fatalf("remaining %v, want 0.5", got)
	}
	r.observeDisc(10, discRows("late", 5, 9))
	if v := metric(t, r.reg, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "dt"}); v != 86 {
		t.Fatalf("records counted %v after the refusals, want 86", v)
	}
}

// A window keeps at most max_records records (the first ones read); the
// rest are counted under reason window_cap. With event time, records of a
// closed window are late and records without observed_at are skipped.
func TestDiscreteWindowCapAndEventTime(t *testing.T) {
	t.Run("cap", func(t *testing.T) {
		cfg := discConfig("cap", 1e6, "output")
		setParams(&cfg, func(p *aggregators.DiscreteParams) { p.MaxRecords = 50 })
		r := newRig(t, at(1), map[string]float64{"stream": 1e7}, cfg)
		first, rest := discRows("a", 30, 1), discRows("b", 50, 2)
		r.observeDisc(0, first)
		r.observeDisc(1, rest)
		if v := metric(t, r.reg, "dpsurv_aggregator_records_skipped_total", map[string]string{"aggregate": "cap", "reason": "window_cap"}); v != 30 {
			t.Fatalf("window_cap skipped %v, want 30", v)
		}
		// 12 bytes per record plus its patient-table entry (48).
		if b := r.eng.StateBytes(); b != 50*(4+4*2+48) {
			t.Fatalf("state %d bytes for 50 records of 2 covariates, want %d", b, 50*60)
		}
		r.clock.Set(at(61))
		r.tick()
		m := r.fits.fits(t)[aggregators.MessageKey("cap", at(0).Unix(), "all")]
		if m.N != 50 || m.MaxRecords != 50 {
			t.Fatalf("n %v, max_records %d; want 50, 50", m.N, m.MaxRecords)
		}
		// The included records are the first 50 read.
		inc := concatRows(first, schemas.Rows{ID: rest.ID[:20], Time: rest.Time[:20], Event: rest.Event[:20], Cohort: rest.Cohort[:20],
			Covariates: [][]float64{rest.Covariates[0][:20], rest.Covariates[1][:20], rest.Covariates[2][:20]}})
		// (within 10 noise scales: P(|Laplace| > 10 scale) = e^-10 per coefficient)
		if d := maxAbsDiff(m.Beta, ridgeMLE(t, inc, regression.DefaultLambda).Beta); d > 10*m.Noise.Scale {
			t.Fatalf("released beta differs from the fit on the first 50 records by %v (noise scale %v)", d, m.Noise.Scale)
		}
	})
	t.Run("event time", func(t *testing.T) {
		cfg := discConfig("ev", 1e6, "output")
		cfg.Window.Time, cfg.Window.Lateness = aggregators.TimeEvent, 30*time.Second
		r := newRig(t, at(61), map[string]float64{"stream": 1e7}, cfg)
		withObs := func(rows schemas.Rows, sec int) schemas.Rows {
			for range rows.ID {
				rows.ObservedAt = append(rows.ObservedAt, at(sec))
			}
			return rows
		}
		r.observeDisc(0, withObs(discRows("a", 20, 1), 10))    // window 0, open (lateness)
		r.observeDisc(1, withObs(discRows("b", 7, 2), 70))     // window 1
		r.observeDisc(2, discRows("c", 4, 3))                  // no observed_at
		r.observeDisc(3, withObs(discRows("d", 3, 4), -3600))  // long closed
		r.observeDisc(4, withObs(discRows("e", 2, 5), 61*200)) // future
		r.clock.Set(at(90))
		r.tick()
		if m := r.fits.fits(t)[aggregators.MessageKey("ev", at(0).Unix(), "all")]; m.N != 20 || m.WindowTime != "event" {
			t.Fatalf("window 0: n %v, window_time %q", m.N, m.WindowTime)
		}
		for reason, want := range map[string]float64{"no_observed_at": 4, "future_observed_at": 2} {
			if v := metric(t, r.reg, "dpsurv_aggregator_records_skipped_total", map[string]string{"aggregate": "ev", "reason": reason}); v != want {
				t.Errorf("%s %v, want %v", reason, v, want)
			}
		}
		if v := metric(t, r.reg, "dpsurv_aggregator_late_records_total", map[string]string{"aggregate": "ev"}); v != 3 {
			t.Errorf("late %v, want 3", v)
		}
	})
}

// The checkpoint carries the windows' records: after a crash the
// redelivered messages below its offsets are skipped, the rest counted,
// each record once; a window released to the ledger but not published is
// re-emitted byte for byte, without noise or a second charge.
func TestDiscreteCheckpointRestart(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 1e7}, discConfig("dt", 1e6, "output"))
	batches := make([]schemas.Rows, 6)
	var all schemas.Rows
	for i := range batches {
		batches[i] = discRows(fmt.Sprint("p", i), 40, uint64(10+i))
		all = concatRows(all, batches[i])
	}
	for off := range 4 {
		r.observeDisc(int64(off), batches[off])
	}
	if err := r.eng.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.observeDisc(4, batches[4])
	r.observeDisc(5, batches[5])
	r.start(2) // crash: offsets 4 and 5 are not in the checkpoint
	if b := r.eng.StateBytes(); b < 160*12 {
		t.Fatalf("restored state holds %d bytes, want the 160 checkpointed records (12 bytes each)", b)
	}
	for off := range 6 {
		r.observeDisc(int64(off), batches[off]) // redelivered from offset 0
	}
	if v := metric(t, r.reg, "dpsurv_aggregator_redelivered_skipped_total", nil); v != 4 {
		t.Fatalf("redelivered metric %v, want 4", v)
	}
	// The window closes; its release reaches the ledger, not the fit topic.
	r.fits.Fail = errors.New("broker down")
	r.clock.Set(at(61))
	r.tick()
	stored, ok := r.led.Lookup(aggregators.WindowKey("dt", at(0).Unix()))
	if !ok || len(r.fits.Messages()) != 0 {
		t.Fatalf("in ledger %v, published %d", ok, len(r.fits.Messages()))
	}
	r.fits.Fail = nil
	r.start(3) // crash again: the restart publishes the stored release
	r.tick()
	if n := r.noise.n.Load(); n != 0 {
		t.Fatalf("the restarted engine drew %d random words for a released window", n)
	}
	msgs := r.fits.Messages()
	var doc struct {
		Messages []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(stored, &doc); err != nil || len(doc.Messages) != 1 || len(msgs) != 1 {
		t.Fatalf("stored %d messages (%v), published %d", len(doc.Messages), err, len(msgs))
	}
	if string(msgs[0].Key) != doc.Messages[0].Key || !bytes.Equal(msgs[0].Value, doc.Messages[0].Value) {
		t.Fatal("the published release differs from the stored one")
	}
	m := r.fits.fits(t)[aggregators.MessageKey("dt", at(0).Unix(), "all")]
	if m.N != 240 {
		t.Fatalf("released n = %v, want 240 (each record once)", m.N)
	}
	if d := maxAbsDiff(m.Beta, ridgeMLE(t, all, regression.DefaultLambda).Beta); d > 1e-4 {
		t.Fatalf("released beta %v differs from the fit on the 240 records by %v", m.Beta, d)
	}
	if r.led.Spent("stream") != 1e6 || r.led.Len() != 1 {
		t.Fatalf("ledger: %v spent, %d entries", r.led.Spent("stream"), r.led.Len())
	}
	if v := metric(t, r.reg, "dpsurv_releases_replayed_total", map[string]string{"aggregate": "dt"}); v != 1 {
		t.Fatalf("replayed metric %v", v)
	}
}

// A crash after the checkpoint that froze a closing window but before the
// ledger stored its release: the restart draws it once from the restored
// records.
func TestDiscreteCrashBeforeReleaseDrawsOnce(t *testing.T) {
	r := newRig(t, at(1), map[string]float64{"stream": 1e7}, discConfig("dt", 1e6, "objective"))
	rows := discRows("a", 120, 4)
	r.observeDisc(0, rows)
	r.backend.FailAppend = errors.New("disk gone")
	r.clock.Set(at(61))
	if !r.tick() || r.led.Len() != 0 {
		t.Fatal("want a checkpoint and no ledger entry")
	}
	r.backend.FailAppend = nil
	r.start(5)
	r.tick()
	m := r.fits.fits(t)[aggregators.MessageKey("dt", at(0).Unix(), "all")]
	if m.N != 120 || r.led.Len() != 1 {
		t.Fatalf("n %v, ledger entries %d", m.N, r.led.Len())
	}
	if d := maxAbsDiff(m.Alpha, ridgeMLE(t, rows, regression.DefaultLambda).Alpha); d > 1e-4 {
		t.Fatalf("alpha after the restart differs from the fit by %v", d)
	}
}

func TestDiscreteConfigValidation(t *testing.T) {
	ok := discConfig("ok", 1, "")
	tests := []struct {
		name string
		mut  func(*aggregators.Config)
		want string
	}{
		{"valid", func(*aggregators.Config) {}, ""},
		{"psgld cloglog", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Method, p.Link = "psgld", "cloglog" })
		}, ""},
		{"no covariates", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Covariates = nil }) }, "params.covariates: required"},
		{"covariate not in schema", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Covariates = []string{"age", "weight"} })
		}, `params.covariates[1]: "weight" is not in schema.covariates`},
		{"repeated covariate", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Covariates = []string{"age", "age"} })
		}, "repeats"},
		{"no centre", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Centre = nil }) }, "params.centre: required"},
		// The refusal shows what to write: a template naming the
		// covariates and a worked example.
		{"no centre example", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Centre = nil }) }, "centre: [<typical age>, <typical score>]"},
		{"no scale example", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Scale = nil }) }, "scale: [40, 4]"},
		{"short scale", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Scale = []float64{1} })
		}, "params.scale: 1 values for 2 covariates"},
		{"zero scale", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Scale = []float64{1, 0} })
		}, "params.scale[1]"},
		{"mle", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Method = "mle" }) }, "non-private"},
		{"unknown method", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Method = "lsp" }) }, "params.method"},
		{"cloglog output", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Method, p.Link = "output", "cloglog" })
		}, ""},
		{"cloglog objective", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Method, p.Link = "objective", "cloglog" })
		}, ""},
		{"probit output", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Method, p.Link = "output", "probit" })
		}, "newton and psgld only"},
		{"cloglog newton (the default method)", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Link = "cloglog" }) }, ""},
		{"fraction with newton", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.IntervalEpsilonFraction = 0.3 })
		}, "does not apply to method newton"},
		{"intervals", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.Intervals = 200_000 })
		}, "params.intervals"},
		{"knots", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Knots = 1 }) }, "params.knots"},
		{"lambda", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Lambda = -1 }) }, "params.lambda"},
		{"time max", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.TimeMax = math.Inf(1) })
		}, "params.time_max"},
		{"cap", func(c *aggregators.Config) {
			setParams(c, func(p *aggregators.DiscreteParams) { p.MaxRecords = 1 << 30 })
		}, "params.max_records"},
		{"steps without psgld", func(c *aggregators.Config) { setParams(c, func(p *aggregators.DiscreteParams) { p.Steps = 10 }) }, "only for method psgld"},
		{"km params", func(c *aggregators.Config) { c.Params = aggregators.KMParams{BinWidth: 7} }, "are not the params of kind discrete"},
		{"cumulative", func(c *aggregators.Config) { c.Window.Cumulative, c.Window.Horizon = true, 3 }, "only km"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			setParams(&c, func(p *aggregators.DiscreteParams) { p.Covariates = append([]string{}, p.Covariates...) })
			tc.mut(&c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	// an explicit 0 is refused only where it would be read as the default
	// (logit); with another link it is the "no interval release" it says
	if _, err := aggregators.ParseParams("discrete", map[string]any{"interval_epsilon_fraction": 0, "link": "cloglog"}); err != nil {
		t.Errorf("fraction 0 with cloglog: %v", err)
	}
	p, err := aggregators.ParseParams("discrete", map[string]any{
		"covariates": []any{"age", "score"}, "centre": []any{60, 0.5}, "scale": []any{20.0, 1},
		"method": "psgld", "intervals": 50, "knots": 4, "lambda": 0.05, "link": "probit", "time_max": 365,
		"max_records": 1000, "steps": 5000,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := aggregators.DiscreteParams{Covariates: []string{"age", "score"}, Centre: []float64{60, 0.5}, Scale: []float64{20, 1},
		Intervals: 50, Knots: 4, Lambda: 0.05, Link: "probit", TimeMax: 365, MaxRecords: 1000, Steps: 5000}
	want.Method = "psgld"
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("parsed %+v, want %+v", p, want)
	}
	for _, tc := range []struct {
		m    map[string]any
		want string
	}{
		{map[string]any{"bin_width": 7}, "params.bin_width: unknown for kind discrete"},
		{map[string]any{"covariates": "age"}, "params.covariates: want a list"},
		{map[string]any{"covariates": []any{"age", 3}}, "params.covariates[1]: want a name"},
		{map[string]any{"centre": []any{"x"}}, "params.centre[0]: want a number"},
		{map[string]any{"intervals": 2.5}, "params.intervals: want an integer"},
		{map[string]any{"lambda": "small"}, "params.lambda: want a number"},
		{map[string]any{"interval_epsilon_fraction": 0}, "params.interval_epsilon_fraction: "},
		{map[string]any{"interval_epsilon_fraction": 0.0, "link": "logit"}, "params.interval_epsilon_fraction: "},
	} {
		if _, err := aggregators.ParseParams("discrete", tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseParams(%v) = %v, want %q", tc.m, err, tc.want)
		}
	}
}

// Adding the discrete params must not change the fingerprints of existing
// km and weibull aggregates: a changed fingerprint would make a running
// service refuse its own checkpoint after an upgrade. (Values computed
// before the discrete kind existed.)
func TestFingerprintsOfExistingKindsUnchanged(t *testing.T) {
	cum := kmConfig("cum", time.Minute, 1)
	cum.Window.Cumulative, cum.Window.Horizon = true, 4
	for name, tc := range map[string]struct {
		cfg  aggregators.Config
		want string
	}{
		"km":         {kmConfig("km", time.Minute, 1), "c48142b354ab6e2d"},
		"weibull":    {aggregators.Config{Name: "wb", Kind: aggregators.KindWeibull, Window: aggregators.Window{Size: time.Minute}, Epsilon: 1e3, Cohorts: cohorts, TimeMax: 100, TimeUnit: "days"}, "e9bcc0041cdfef8d"},
		"cumulative": {cum, "2ddd6bf6fef0ebb3"},
	} {
		if got := tc.cfg.Fingerprint(); got != tc.want {
			t.Errorf("%s: fingerprint %s, want %s", name, got, tc.want)
		}
	}
	a, b := discConfig("d", 1, ""), discConfig("d", 1, "")
	setParams(&b, func(p *aggregators.DiscreteParams) { p.Centre = []float64{61, 0} })
	if a.Fingerprint() == b.Fingerprint() {
		t.Error("a changed discrete centre keeps the fingerprint")
	}
	c := discConfig("d", 1, "")
	setParams(&c, func(p *aggregators.DiscreteParams) {
		p.IntervalEpsilonFraction = regression.DefaultIntervalFraction / 2
	})
	if a.Fingerprint() == c.Fingerprint() {
		t.Error("a changed interval share keeps the fingerprint")
	}
}
