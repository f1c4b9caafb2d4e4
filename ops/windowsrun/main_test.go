package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/internal/testtier"
)

// A brief run of the command docs/performance.md records (issues 21, 24):
// km, weibull and discrete windows released through the whole service,
// ops.CheckReleases clean, and every probe measuring. The figures are not
// checked (speed lives in the documented runs); that they are produced is.
func TestWindowsrunBrief(t *testing.T) {
	testtier.Full(t, "a run of the service with three aggregates")
	var out bytes.Buffer
	// 5 s windows: with 2 s ones, at load 19 under -race (five CI runs at
	// once), the releases of the windows that keep closing during the drain
	// fell behind them (3 weibull releases in 180 s) and it never drained.
	o := options{rate: 400, duration: 5 * time.Second, window: 5 * time.Second, lateness: 2 * time.Second, batch: 50,
		drain: 3 * time.Minute, logFile: filepath.Join(t.TempDir(), "windowsrun.log"), sims: -1, discrete: true}
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Drained       bool                   `json:"drained"`
		CheckReleases string                 `json:"check_releases_error"`
		Intake        struct{ Messages int } `json:"intake_latency_ms"`
		TickCount     float64                `json:"aggregator_tick_count"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not one JSON object: %v\n%s", err, out.String())
	}
	if !rep.Drained || rep.CheckReleases != "<nil>" {
		t.Fatalf("drained %v, CheckReleases %s", rep.Drained, rep.CheckReleases)
	}
	var aggs map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &aggs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"km", "weibull", "discrete"} {
		var a struct {
			Released     float64
			ReleaseDelay struct{ Windows int }
		}
		if err := json.Unmarshal(aggs[name], &a); err != nil {
			t.Fatalf("report of %s: %v", name, err)
		}
		if a.Released < 1 || a.ReleaseDelay.Windows < 1 {
			t.Errorf("%s: %v windows released, %d release delays measured; want at least one of each", name, a.Released, a.ReleaseDelay.Windows)
		}
	}
	if rep.Intake.Messages < 1 || rep.TickCount < 1 {
		t.Errorf("intake latencies of %d messages, %v Ticks: the probes measured nothing", rep.Intake.Messages, rep.TickCount)
	}
}
