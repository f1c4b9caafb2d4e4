package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/message"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// killableSource fails its pending and later reads once killed: the
// aggregators stop like a killed process, with no final checkpoint.
type killableSource struct {
	message.Source
	killed chan struct{}
	once   sync.Once
}

var errKilled = fmt.Errorf("aggregator killed: %w", pipeline.ErrStop)

func (k *killableSource) kill() { k.once.Do(func() { close(k.killed) }) }

func (k *killableSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-k.killed:
			cancel()
		case <-ctx.Done():
		}
	}()
	b, err := k.Source.ReadBatch(ctx)
	select {
	case <-k.killed:
		return message.Batch{}, errKilled
	default:
	}
	return b, err
}

// downSink refuses every write (the fit topic unreachable).
type downSink struct{ message.Sink }

func (downSink) Write(context.Context, []message.Message) error {
	return errors.New("fit topic unreachable")
}

// Records in, releases on the fit topic with the right keys and metadata;
// the aggregators are killed mid-window after a release reached the ledger
// but not the fit topic; the restart re-emits that release from the ledger
// (same bytes, no new noise, no new charge), counts the killed window's
// records once, and each window is released exactly once.
func TestAggregatorsEndToEndKillRestartReleaseOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"kafka-ledger", "file-ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testAggregatorsEndToEnd(t, mode == "file-ledger")
		})
	}
}

func testAggregatorsEndToEnd(t *testing.T, fileLedger bool) {
	cohorts := []string{"A", "B", "C"}
	cfg := e2eConfig(nil, "agg-e2e", cohorts, "out")
	cfg.Input.Partitions = 2
	cfg.Aggregators = []app.AggregatorConfig{
		{Name: "km", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour}, Params: aggregators.KMParams{BinWidth: 10}},
		{Name: "cum", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour, Cumulative: true, Horizon: 8}, Params: aggregators.KMParams{BinWidth: 10}},
	}
	cfg.Ledger = app.LedgerConfig{Topic: "dpsurv.ledger", Budget: map[string]float64{"stream": 10}, CheckpointInterval: time.Hour}
	if fileLedger {
		cfg.Ledger.Topic, cfg.Ledger.File = "", filepath.Join(t.TempDir(), "ledger.jsonl")
	}
	w0 := time.Unix(1_700_002_800, 0).UTC() // an hour boundary
	f := apptest.New(t, cfg, apptest.Partitions(2), apptest.Timeout(120*time.Second), apptest.FakeClock(w0.Add(time.Minute)))
	clock := f.Clock

	const perWindow = 600
	produce := func(seed uint64, prefix string) {
		produceCohort(f, synth.Options{N: perWindow, Cohorts: cohorts, TimeMax: 400, Seed: seed, IDPrefix: prefix}, 25)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		f.WaitFor(60*time.Second, what, cond)
	}

	// Run 1: window 0 fills; at its end its release goes to the ledger but
	// the fit topic is down; window 1's records arrive; then the
	// aggregators are killed (no final checkpoint).
	produce(1, "secret-patient-a-")
	var src1 *killableSource
	svc1 := f.Run(func(s *app.Service) {
		s.Transport = apptest.Kafka(f.Config, func(role app.Role, s message.Source) message.Source {
			if role != app.RoleAggregatorInput {
				return s
			}
			src1 = &killableSource{Source: s, killed: make(chan struct{})}
			return src1
		}, func(role app.Role, s message.Sink) message.Sink {
			if role != app.RoleFits {
				return s
			}
			return downSink{s}
		})
	})
	counted := func(svc *apptest.Service, n float64) func() bool {
		return func() bool {
			return svc.Metric("dpsurv_aggregator_records_total", map[string]string{"aggregate": "km"}) == n
		}
	}
	waitFor("window 0 counted", counted(svc1, perWindow))
	clock.Set(w0.Add(61 * time.Minute))
	waitFor("window 0 in the ledger", func() bool {
		return svc1.Metric("dpsurv_releases_total", map[string]string{"aggregate": "km"}) == 1 &&
			svc1.Metric("dpsurv_releases_total", map[string]string{"aggregate": "cum"}) == 1
	})
	produce(2, "secret-patient-b-")
	waitFor("window 1 counted", counted(svc1, 2*perWindow))
	src1.kill()
	if err := svc1.Wait(); !errors.Is(err, errKilled) {
		t.Fatalf("run 1: %v, want the kill", err)
	}
	if got := svc1.Metric("dpsurv_fit_messages_total", nil); got != 0 {
		t.Fatalf("run 1 published %v messages through a down fit topic", got)
	}

	// Run 2: same clock (still in window 1), working fit topic.
	svc2 := f.Run()
	waitFor("window 1 recounted", counted(svc2, perWindow))
	clock.Set(w0.Add(121 * time.Minute))
	waitFor("window 1 released", func() bool {
		return svc2.Metric("dpsurv_releases_total", map[string]string{"aggregate": "km"}) == 1 &&
			svc2.Metric("dpsurv_releases_total", map[string]string{"aggregate": "cum"}) == 1
	})

	// Collect the fit topic: 2 aggregates x 2 windows x 3 cohorts.
	want := map[string]bool{}
	for _, agg := range []string{"km", "cum"} {
		for w := range 2 {
			for _, c := range cohorts {
				want[aggregators.MessageKey(agg, w0.Add(time.Duration(w)*time.Hour).Unix(), c)] = true
			}
		}
	}
	byKey, fits, dups := f.Read("fits", "fit-reader").Releases(want)
	if err := svc2.Stop(); err != nil {
		t.Fatalf("run 2: %v", err)
	}
	sumN := func(agg string, w int) float64 {
		s := 0.0
		for _, c := range cohorts {
			s += float64(fits[aggregators.MessageKey(agg, w0.Add(time.Duration(w)*time.Hour).Unix(), c)].N)
		}
		return s
	}
	// Noise (hierarchical km, 41 bins: 3 levels; n is the sum of the
	// inferred roots of 2 trees x 3 cohorts): an SD below 50; 250 is over
	// 5 SD (false alarm below 1e-6), while a window counted twice (1200)
	// or not at all (0) is far outside.
	for w := range 2 {
		if n := sumN("km", w); math.Abs(n-perWindow) > 250 {
			t.Errorf("km window %d: released n = %v, want %d ± 250", w, n, perWindow)
		}
	}
	// The cumulative release of window 1 covers both windows; its node
	// noise (4 levels: scale 8, variance 128 per cell) gives an SD of
	// about 180: 900 is 5 SD.
	if n := sumN("cum", 1); math.Abs(n-2*perWindow) > 900 {
		t.Errorf("cumulative window 1: n = %v, want %d", n, 2*perWindow)
	}
	type meta struct {
		key                  string
		start, end           time.Time
		remaining, charged   float64
		cumulative           bool
		index                int
		method, neighbouring string
	}
	for _, m := range []meta{
		// This service publishes a sanitized topic: presence and n are
		// public through it, so the releases say so and each add/remove-one
		// release is charged its replace-one cost, 2 epsilon (issue 22).
		{aggregators.MessageKey("km", w0.Unix(), "A"), w0, w0.Add(time.Hour), 6, 2, false, 0, "hierarchical-histogram-km", km.NeighbouringAddRemove + aggregators.NeighbouringSanitizedTopic},
		{aggregators.MessageKey("km", w0.Add(time.Hour).Unix(), "C"), w0.Add(time.Hour), w0.Add(2 * time.Hour), 4, 2, false, 0, "hierarchical-histogram-km", km.NeighbouringAddRemove + aggregators.NeighbouringSanitizedTopic},
		{aggregators.MessageKey("cum", w0.Unix(), "B"), w0, w0.Add(time.Hour), 6, 0, true, 1, "tree-counter-km", km.NeighbouringAddRemove + aggregators.NeighbouringSanitizedTopic},
		{aggregators.MessageKey("cum", w0.Add(time.Hour).Unix(), "A"), w0.Add(time.Hour), w0.Add(2 * time.Hour), 4, 0, true, 2, "tree-counter-km", km.NeighbouringAddRemove + aggregators.NeighbouringSanitizedTopic},
	} {
		f := fits[m.key]
		// The two aggregates' fits of one window run concurrently (async
		// fits), so which of their charges the ledger records first is
		// unspecified: the remaining budget a release states is the
		// expected one or one charge (2) more.
		if r := f.BudgetRemaining["stream"]; r == m.remaining+2 {
			m.remaining = r
		}
		got := fmt.Sprint(f.Key, f.WindowStart, f.WindowEnd, f.BudgetRemaining["stream"], f.EpsilonCharged, f.Cumulative, f.ReleaseIndex, f.Method, f.Neighbouring, f.Guarantee, f.Epsilon)
		exp := fmt.Sprint(m.key, m.start.Format(time.RFC3339), m.end.Format(time.RFC3339), m.remaining, m.charged, m.cumulative, m.index, m.method, m.neighbouring, "pure-dp", 1.0)
		if got != exp {
			t.Errorf("metadata of %s:\n got  %s\n want %s", m.key, got, exp)
		}
		// (A cumulative curve may be truncated to nothing: its tree noise
		// is four times larger.)
		if (len(f.Surv) == 0 && !f.Cumulative) || len(f.Surv) != len(f.Time) || len(f.NRisk) != len(f.Time) {
			t.Errorf("%s: curve of %d points, %d times", m.key, len(f.Surv), len(f.Time))
		}
	}

	// Run 2 re-emitted window 0 from the ledger and drew window 1 only.
	for _, agg := range []string{"km", "cum"} {
		if v := svc2.Metric("dpsurv_releases_replayed_total", map[string]string{"aggregate": agg}); v != 1 {
			t.Errorf("%s: %v replays in run 2, want 1", agg, v)
		}
	}
	// The ledger: five entries (km and cum for two windows, the cumulative
	// charge), the published bytes are the stored ones, 6 epsilon spent
	// (3 releases at their replace-one cost 2).
	led := f.OpenLedger()
	if led.Len() != 5 || led.Spent("stream") != 6 {
		t.Fatalf("ledger: %d entries, %v spent; want 5 and 6", led.Len(), led.Spent("stream"))
	}
	stored, _ := led.Lookup(aggregators.WindowKey("km", w0.Unix()))
	var doc struct {
		Messages []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(stored, &doc); err != nil || len(doc.Messages) != 3 {
		t.Fatalf("stored window 0: %v, %d messages", err, len(doc.Messages))
	}
	for _, m := range doc.Messages {
		if !bytes.Equal(byKey[m.Key], m.Value) {
			t.Fatalf("published %s differs from the ledger's stored release", m.Key)
		}
	}

	// The Arrow curve tables.
	ms := f.Read("fits.arrow", "curve-reader").Next()
	recs, err := arrowipc.DecodeRecords(ms[0].Value, f.Mem)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := recs[0].Schema().Metadata().GetValue("dpsurv.key"); v != string(ms[0].Key) || int(recs[0].NumCols()) != len(schemas.KMCurveColumns)+1 {
		t.Fatalf("curve table for %s: metadata key %q, %d columns", ms[0].Key, v, recs[0].NumCols())
	}
	for _, r := range recs {
		r.Release()
	}

	out := f.Logs.String()
	for _, needle := range []string{"secret-patient"} {
		if strings.Contains(out, needle) {
			t.Fatalf("logs contain raw value %q", needle)
		}
	}
	t.Logf("%d distinct releases, %d byte-identical duplicates on the fit topic; released n: km window 0 %.0f, window 1 %.0f, cumulative %.0f then %.0f (true 600, 600, 600, 1200)",
		len(byKey), dups, sumN("km", 0), sumN("km", 1), sumN("cum", 0), sumN("cum", 1))
	f.Mem.AssertSize(t, 0)
}
