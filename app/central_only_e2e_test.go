package app_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// Issue 22 finding 2: a service without output.sanitized_topic publishes
// central releases only, and its km releases then claim add/remove-one
// without the sanitized-topic amendment; with a sanitized topic the same
// release lists presence and n as public through it.
func TestCentralOnlyServiceEndToEnd(t *testing.T) {
	t.Parallel()
	for _, sanitized := range []string{"", "out"} {
		t.Run("sanitized_topic="+sanitized, func(t *testing.T) {
			t.Parallel()
			cohorts := []string{"A", "B"}
			cfg := e2eConfig(nil, "central-e2e", cohorts, sanitized)
			cfg.Aggregators = []app.AggregatorConfig{{Name: "km", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour},
				Params: aggregators.KMParams{BinWidth: 20}}}
			cfg.Ledger = app.LedgerConfig{Topic: "dpsurv.ledger", Budget: map[string]float64{"stream": 10}, CheckpointInterval: time.Hour}
			f, svc := runFirstWindow(t, cfg, 200, 3)
			fit := nextRelease(t, f.Read("fits", "fit-reader"))
			svc.StopOK()
			listed := slices.Contains(fit.Public, aggregators.PublicViaSanitized)
			if listed != (sanitized != "") || strings.Contains(fit.Neighbouring, "sanitized topic") != (sanitized != "") {
				t.Fatalf("sanitized topic %q: release public %v, neighbouring %q", sanitized, fit.Public, fit.Neighbouring)
			}
			central := strings.Contains(f.Logs.String(), "central releases only")
			if central != (sanitized == "") {
				t.Fatalf("sanitized topic %q: central-only logged %v", sanitized, central)
			}
			if strings.Contains(f.Logs.String(), "secret-patient") {
				t.Fatal("logs contain raw record ids")
			}
			f.Mem.AssertSize(t, 0)
		})
	}
}

// e2eConfig is a one-partition Arrow service config named name (client
// and group id) on brokers (nil: apptest.New fills in its broker) with
// cohorts over [0, 400] days, the test TE settings, debug logging and the
// given sanitized topic ("" for central releases only); the caller adds
// the aggregators and the ledger.
func e2eConfig(brokers []string, name string, cohorts []string, sanitized string) app.Config {
	cfg := apptest.Config(name, cohorts, 400)
	cfg.Kafka.Brokers = brokers
	cfg.Input.Partitions = 1
	cfg.Sanitizers.Cohort = sanitizers.CohortConfig{Mechanism: "none"}
	cfg.Output = app.OutputConfig{SanitizedTopic: sanitized, DeadLetterTopic: "dlq", FitTopic: "fits"}
	cfg.Log.Level = "debug"
	return cfg
}

// runFirstWindow runs cfg's service on a fixture whose fake clock is one
// minute into the hour window starting at 1_700_002_800, feeds it n
// synthetic records of cfg's cohorts (seed; ids "secret-patient-…",
// which no log may show), waits until aggregate "km" has counted them all
// and moves the clock past the window's end: the window is due.
func runFirstWindow(t *testing.T, cfg app.Config, n int, seed uint64) (*apptest.Fixture, *apptest.Service) {
	t.Helper()
	w0 := time.Unix(1_700_002_800, 0).UTC()
	f := apptest.New(t, cfg, apptest.FakeClock(w0.Add(time.Minute)))
	produceCohort(f, synth.Options{N: n, Cohorts: cfg.Schema.Cohorts, TimeMax: 400, Seed: seed, IDPrefix: "secret-patient-"}, 50)
	svc := f.Run()
	svc.WaitFor(40*time.Second, "records counted", func() bool {
		return svc.Metric("dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"}) == float64(n)
	})
	f.Clock.Set(w0.Add(61 * time.Minute))
	return f, svc
}

// produceCohort writes a synthetic cohort to the input topic as Arrow
// messages of batch records; it returns the cohort.
func produceCohort(f *apptest.Fixture, o synth.Options, batch int) synth.Data {
	f.T.Helper()
	d, err := synth.Generate(o)
	if err != nil {
		f.T.Fatal(err)
	}
	msgs, err := harness.Messages(f.Config.Spec(), d, batch, f.Mem)
	if err != nil {
		f.T.Fatal(err)
	}
	f.Produce(f.Config.Input.Topic, msgs)
	return d
}

// nextRelease reads the fit topic until a release (not the privacy
// statement, statement_e2e_test.go) comes, and decodes it.
func nextRelease(t testing.TB, r *apptest.Reader) aggregators.FitMessage {
	for {
		for _, m := range r.Next() {
			if schemas.IsPatientStatementKey(m.Key) {
				continue
			}
			var fit aggregators.FitMessage
			if err := json.Unmarshal(m.Value, &fit); err != nil {
				t.Fatal(err)
			}
			return fit
		}
	}
}
