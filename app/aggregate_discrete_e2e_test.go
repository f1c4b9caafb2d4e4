package app_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/regression"
	"github.com/dpsurv/dpsurv/synth"
)

// Discrete-time regression aggregates in the running service: records with
// a covariate in, one release per window and aggregate on the fit topic
// (key <aggregate>/<window_start_unix>/all) with its metadata, charged to
// the Kafka ledger and published from the stored bytes. At a huge epsilon
// the output-perturbation release equals (within 1e-4) the ridge MLE of
// regression.FitDiscrete on the same window's records.
func TestDiscreteAggregatorEndToEnd(t *testing.T) {
	t.Parallel()
	cohorts := []string{"A", "B"}
	const timeMax, intervals = 400.0, 40
	cfg := e2eConfig(nil, "disc-e2e", cohorts, "out")
	cfg.Input.Partitions = 2
	cfg.Schema.TimeMax, cfg.Schema.Covariates = timeMax, []string{"age"}
	disc := aggregators.DiscreteParams{Method: "output", Covariates: []string{"age"}, Centre: []float64{60}, Scale: []float64{20}, Intervals: intervals}
	mcmc := disc
	// A short chain: this test checks the release through the service; the
	// sampler's accuracy is regression's (TestPSGLD*).
	mcmc.Method, mcmc.Link, mcmc.Steps = "psgld", "cloglog", 200
	cfg.Aggregators = []app.AggregatorConfig{
		{Name: "dt", Kind: "discrete", Epsilon: 1e6, Window: app.WindowConfig{Size: time.Hour},
			Params: disc}, // the ridge-MLE comparison below is output's (newton, the default, is tested in aggregators)
		{Name: "dt-mcmc", Kind: "discrete", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour},
			Params: mcmc},
	}
	cfg.Ledger = app.LedgerConfig{Topic: "dpsurv.ledger", Budget: map[string]float64{"stream": 1e7}, CheckpointInterval: time.Hour}
	w0 := time.Unix(1_700_002_800, 0).UTC() // an hour boundary
	f := apptest.New(t, cfg, apptest.Partitions(2), apptest.Timeout(120*time.Second), apptest.FakeClock(w0.Add(time.Minute)))
	const n = 600
	d := produceCohort(f, synth.Options{N: n, Cohorts: cohorts, TimeMax: timeMax, Seed: 5, IDPrefix: "secret-patient-"}, 25)
	svc := f.Run()
	f.WaitFor(60*time.Second, "the window's records counted", func() bool {
		return svc.Metric("dpsurv_aggregator_records_total", map[string]string{"aggregate": "dt"}) == n &&
			svc.Metric("dpsurv_aggregator_records_total", map[string]string{"aggregate": "dt-mcmc"}) == n
	})
	f.Clock.Set(w0.Add(61 * time.Minute))

	want := map[string]bool{
		aggregators.MessageKey("dt", w0.Unix(), "all"):      true,
		aggregators.MessageKey("dt-mcmc", w0.Unix(), "all"): true,
	}
	byKey, fits, _ := f.Read("fits", "fit-reader").Releases(want)
	svc.StopOK()
	out, mc := fits[aggregators.MessageKey("dt", w0.Unix(), "all")], fits[aggregators.MessageKey("dt-mcmc", w0.Unix(), "all")]
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"dt kind", out.Kind, "discrete"},
		{"dt method", out.Method, "output"},
		{"dt guarantee", out.Guarantee, regression.GuaranteePureDPCertified},
		{"dt neighbouring", out.Neighbouring, aggregators.NeighbouringDiscrete},
		{"dt window", out.WindowStart + " " + out.WindowEnd, w0.Format(time.RFC3339) + " " + w0.Add(time.Hour).Format(time.RFC3339)},
		{"dt epsilon", out.Epsilon, 1e6},
		{"dt charged", out.EpsilonCharged, 1e6},
		{"dt n", float64(out.N), float64(n)},
		{"dt covariates", strings.Join(out.Covariates, ","), "age"},
		{"mcmc method", mc.Method, "psgld"},
		{"mcmc guarantee", mc.Guarantee, "approximate (mcmc)"},
		{"mcmc link", mc.Link, "cloglog"},
		{"mcmc epsilon", mc.Epsilon, 1.0},
		{"mcmc shape", len(mc.Alpha)*10 + len(mc.Beta), 31},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Both windows charged the ledger once; its order decides which saw
	// the other's charge, so the remaining budgets are one of two pairs.
	rOut, rMC := out.BudgetRemaining["stream"], mc.BudgetRemaining["stream"]
	if !(rOut == 1e7-1e6 && rMC == 1e7-1e6-1) && !(rMC == 1e7-1 && rOut == 1e7-1e6-1) {
		t.Errorf("budget remaining %v and %v", rOut, rMC)
	}

	ref, err := regression.FitDiscrete(regression.Data{Time: d.Time, Event: d.Event, X: column(d.Age)}, regression.DiscreteOptions{
		Method: regression.MethodMLE, Ridge: true, Lambda: regression.DefaultLambda, Intervals: intervals, TimeMax: timeMax,
		Scaling: regression.Scaling{Centre: []float64{60}, Scale: []float64{20}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	diff := 0.0
	for i, v := range append(append([]aggregators.F{}, out.Alpha...), out.Beta...) {
		diff = math.Max(diff, math.Abs(float64(v)-append(append([]float64{}, ref.Alpha...), ref.Beta...)[i]))
	}
	if diff > 1e-4 {
		t.Errorf("released alpha %v beta %v; ridge MLE on the window's records %v %v (max diff %.2g)", out.Alpha, out.Beta, ref.Alpha, ref.Beta, diff)
	}

	// The ledger holds the two releases; the published bytes are the stored ones.
	led := f.OpenLedger()
	if led.Len() != 2 || led.Spent("stream") != 1e6+1 || led.Spent("cohort:A") != 1e6+1 {
		t.Fatalf("ledger: %d entries, stream %v, cohort:A %v spent", led.Len(), led.Spent("stream"), led.Spent("cohort:A"))
	}
	for _, agg := range []string{"dt", "dt-mcmc"} {
		stored, _ := led.Lookup(aggregators.WindowKey(agg, w0.Unix()))
		var doc struct {
			Messages []struct {
				Key   string          `json:"key"`
				Value json.RawMessage `json:"value"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(stored, &doc); err != nil || len(doc.Messages) != 1 || !bytes.Equal(byKey[doc.Messages[0].Key], doc.Messages[0].Value) {
			t.Fatalf("%s: the published release is not the stored one (%v)", agg, err)
		}
	}
	if strings.Contains(f.Logs.String(), "secret-patient") {
		t.Fatal("logs contain raw record ids")
	}
	t.Logf("discrete releases: output beta %.4f (ridge MLE %.4f, n %v); psgld/cloglog at epsilon 1: beta %.3f, n %v",
		float64(out.Beta[0]), ref.Beta[0], out.N, float64(mc.Beta[0]), mc.N)
	f.Mem.AssertSize(t, 0)
}

func column(x []float64) [][]float64 {
	out := make([][]float64, len(x))
	for i, v := range x {
		out[i] = []float64{v}
	}
	return out
}
