package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/internal/harness"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/pipeline"
)

// opsAggConfig adds a km and a weibull aggregator on processing-time
// windows of size, a Kafka ledger and a fit topic to opsConfig.
func opsAggConfig(conn kafkaconn.Config, group string, size time.Duration, kmEps, wbEps, budget float64) pipeline.Config {
	cfg := opsConfig(conn, group)
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Output.FitTopic = "ops.fits"
	cfg.Aggregators = []pipeline.AggregatorConfig{
		{Name: "km", Kind: "km", Epsilon: kmEps, Window: pipeline.WindowConfig{Size: size},
			Params: map[string]any{"method": "noisy-histogram", "bin_width": 1000}},
		{Name: "weibull", Kind: "weibull", Epsilon: wbEps, Window: pipeline.WindowConfig{Size: size},
			Params: map[string]any{"bin_width": 50, "rungs": 200}},
	}
	cfg.Ledger = pipeline.LedgerConfig{Topic: "ops.ledger", CheckpointInterval: time.Second,
		LeaseSessionTimeout: 6 * time.Second, Budget: map[string]float64{"stream": budget}}
	return cfg
}

// opsMidWindow waits for the middle of a processing-time window of size
// (the wall clock, as the service's), so that no window closes just then.
func opsMidWindow(ctx context.Context, size time.Duration) {
	for ctx.Err() == nil {
		now := time.Now()
		if off := now.Sub(now.Truncate(size)); off >= size*2/5 && off < size*3/5 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// opsLedgerHas reports whether the ledger topic holds key.
func opsLedgerHas(ctx context.Context, conn kafkaconn.Config, topic, key string) bool {
	es, err := ops.ReadLedger(ctx, conn, topic)
	if err != nil {
		return false
	}
	for _, e := range es {
		if e.Key == key {
			return true
		}
	}
	return false
}

// TestOpsAggregatorsBrokerRestart stops the broker (data dir, synced
// writes) while the aggregators run on 2 s processing-time windows, keeps
// it down across a window boundary (the closing window's checkpoint, charge
// and publication fail and are retried), and starts it again on the same
// address and data dir. Afterwards the fit and ledger topics must satisfy
// ops.CheckReleases: no window released twice (a key always carries the
// same bytes, equal to the ledger's copy), one ledger entry per window
// (repeated appends byte-identical), budget_remaining consistent with the
// charges, every released window published; and every record counted in
// exactly one released km window (n summed over the windows, 5 SD bound).
// Windows the outage swallowed may be missing (the service does not
// release windows it was not running for) and are reported.
func TestOpsAggregatorsBrokerRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 58*time.Second)
	t.Cleanup(cancel)
	dir := t.TempDir()
	opts := broker.Options{DataDir: dir, SyncWrites: true, Partitions: 4}
	b1, err := broker.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b1.Close() })
	addr := b1.Addrs()[0]
	opts.Listen = addr
	conn := kafkaconn.Config{Brokers: []string{addr}, ClientID: "ops-aggrestart"}
	const (
		size   = 2 * time.Second
		kmEps  = 4.0
		wbEps  = 0.5
		budget = 1000.0
	)
	cfg := opsAggConfig(conn, "ops-aggrestart", size, kmEps, wbEps, budget)
	cfg.HTTP.Listen = opsFreeAddr(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{cfg.Input.Topic: 4, cfg.Output.SanitizedTopic: 4, cfg.Output.DeadLetterTopic: 1}, nil); err != nil {
		t.Fatal(err)
	}
	in := opsNewInput(t, cfg, opsKey, 5000, 25, 71, "rawidar")
	half := len(in.msgs) / 2
	logs := &opsLogs{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log tail:\n%s", opsLogTail(logs.String()))
		}
	})
	sv := opsSupervise(t, ctx, func() *pipeline.Service {
		return &pipeline.Service{Config: cfg, Key: opsKey, Log: logs.logger(), AggregatorTick: 50 * time.Millisecond}
	})
	waitFor := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		if !harness.WaitFor(ctx, timeout, cond) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	// Phase 1: 2,500 records over about 2.5 s; the outage starts mid-window
	// once two windows with records are released.
	startUnix := time.Now().Unix()
	if err := opsProduceAt(ctx, conn, cfg.Input.Topic, in.msgs[:half], 2, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	s0 := (startUnix + 2) / 2 * 2 // the first window that starts after the records began
	waitFor("two windows released before the outage", 20*time.Second, func() bool {
		return opsLedgerHas(ctx, conn, cfg.Ledger.Topic, aggregators.WindowKey("km", s0+2))
	})
	// The outage starts 150 ms before a window closes: that window's
	// checkpoint, charge and publication happen after the restart.
	before, err := ops.ReadLedger(ctx, conn, cfg.Ledger.Topic)
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		now := time.Now()
		if off := now.Sub(now.Truncate(size)); off >= size-150*time.Millisecond && off < size-100*time.Millisecond {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	stopAt := time.Now()
	time.Sleep(2500 * time.Millisecond) // the outage: across a window boundary
	b2, err := broker.Start(opts)
	if err != nil {
		t.Fatalf("restart broker on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = b2.Close() })
	upAt := time.Now()
	// The aggregators resume: a charge that was not in the ledger before.
	var resumedAt time.Time
	waitFor("the aggregators to release after the restart", 20*time.Second, func() bool {
		es, err := ops.ReadLedger(ctx, conn, cfg.Ledger.Topic)
		if err == nil && len(es) > len(before) {
			resumedAt = time.Now()
			return true
		}
		return false
	})

	// Phase 2: the other half, then wait until every record is in a
	// checkpoint and the window holding that moment is released.
	if err := opsProduceAt(ctx, conn, cfg.Input.Topic, in.msgs[half:], 2, 50*time.Millisecond); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	var caughtUp time.Time
	waitFor("the aggregators' offsets to reach the end of the input", 25*time.Second, func() bool {
		lag, err := ops.GroupLag(ctx, conn, cfg.AggregatorGroupID(), cfg.Input.Topic)
		if err == nil && lag == 0 {
			caughtUp = time.Now()
			return true
		}
		return false
	})
	last := aggregators.WindowKey("km", caughtUp.Truncate(size).Unix())
	waitFor("window "+last, 15*time.Second, func() bool { return opsLedgerHas(ctx, conn, cfg.Ledger.Topic, last) })
	opsMidWindow(ctx, size)
	sv.stop()

	fits, err := ops.ReadTopic(ctx, conn, cfg.Output.FitTopic)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ops.ReadLedger(ctx, conn, cfg.Ledger.Topic)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ops.CheckReleases(fits, entries, ops.ReleaseOptions{
		Epsilon: map[string]float64{"km": kmEps, "weibull": wbEps},
		Cohorts: cfg.Schema.Cohorts, StreamBudget: budget, Complete: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	nkm, nwb := len(rep.Windows["km"]), len(rep.Windows["weibull"])
	if want := float64(nkm)*kmEps + float64(nwb)*wbEps; math.Abs(rep.Spent-want) > 1e-9 {
		t.Errorf("ledger spent %v, want %d x %v + %d x %v = %v", rep.Spent, nkm, kmEps, nwb, wbEps, want)
	}
	// Missing windows only where the outage was.
	sz := int64(size / time.Second)
	var missing []int64
	for _, agg := range []string{"km", "weibull"} {
		ws := rep.Windows[agg]
		have := map[int64]bool{}
		for _, s := range ws {
			have[s] = true
		}
		for s := ws[0]; s <= ws[len(ws)-1]; s += sz {
			if have[s] {
				continue
			}
			if agg == "km" {
				missing = append(missing, s)
			}
			// Window [s, s+sz) must overlap the outage and the rejoin.
			if !(s+sz > stopAt.Unix() && s <= resumedAt.Unix()) {
				t.Errorf("%s: window %d not released, outside the outage and rejoin [%d, %d]", agg, s, stopAt.Unix(), resumedAt.Unix())
			}
		}
	}
	// Every record in exactly one released km window (as in the kill
	// test: 3 cohorts x 8 noisy cells per window, scale 2/epsilon).
	p := math.Exp(-kmEps / 2)
	sd := math.Sqrt(float64(nkm*len(cfg.Schema.Cohorts)*8) * 2 * p / ((1 - p) * (1 - p)))
	tol := 5*sd + float64(nkm*len(cfg.Schema.Cohorts))
	if math.Abs(rep.N["km"]-float64(len(in.want))) > tol {
		t.Errorf("km n summed over released windows = %.0f, want %d ± %.0f (records lost or counted twice)", rep.N["km"], len(in.want), tol)
	}
	exits := sv.exitErrors()
	for _, e := range exits {
		t.Logf("service exited (a supervisor restarted it): %v", e)
	}
	if len(exits) > 1 {
		t.Errorf("%d exits for one broker outage, want at most 1", len(exits))
	}
	if strings.Contains(logs.String(), "rawidar") {
		t.Error("the service logged a raw id")
	}
	l := logs.String()
	t.Logf("broker down %v, aggregators releasing again %v after it came back; log: %d failed checkpoints, %d failed releases, %d failed fit writes, %d lease generations ended, %d windows re-emitted from the ledger",
		upAt.Sub(stopAt).Round(100*time.Millisecond), resumedAt.Sub(upAt).Round(100*time.Millisecond),
		strings.Count(l, "checkpoint failed"), strings.Count(l, "window release failed"), strings.Count(l, "fit topic write failed"),
		strings.Count(l, "lease generation ended"), strings.Count(l, "re-emitted from the ledger"))
	t.Logf("broker down %v; km: %d windows released of %d elapsed (missing %v), weibull: %d of %d; %d fit messages (%d repeated, identical); %d ledger entries (%d repeated appends, identical); spent %.1f; km n total %.0f for %d records (tolerance %.0f); %d supervisor restart(s)",
		upAt.Sub(stopAt).Round(100*time.Millisecond), nkm, rep.Elapsed("km", size), missing, nwb, rep.Elapsed("weibull", size),
		rep.FitMessages, rep.FitDuplicates, rep.LedgerRecords, rep.LedgerRepeats, rep.Spent, rep.N["km"], len(in.want), tol, len(exits))
}

// TestLeaseSessionTimeoutConfig: ledger.lease_session_timeout defaults to
// 10 s and is validated (Kafka brokers refuse sessions under 6 s by
// default; only the Kafka ledger has a lease).
func TestLeaseSessionTimeoutConfig(t *testing.T) {
	base := opsAggConfig(kafkaconn.Config{Brokers: []string{"127.0.0.1:9092"}}, "cfg", time.Hour, 1, 1, 10)
	cases := []struct {
		name string
		edit func(*pipeline.Config)
		want time.Duration
		err  string
	}{
		{"default", func(c *pipeline.Config) { c.Ledger.LeaseSessionTimeout = 0 }, 10 * time.Second, ""},
		{"set", func(c *pipeline.Config) { c.Ledger.LeaseSessionTimeout = 45 * time.Second }, 45 * time.Second, ""},
		{"too short", func(c *pipeline.Config) { c.Ledger.LeaseSessionTimeout = 3 * time.Second }, 0, "ledger.lease_session_timeout: must be between 6s and 5m"},
		{"too long", func(c *pipeline.Config) { c.Ledger.LeaseSessionTimeout = time.Hour }, 0, "ledger.lease_session_timeout: must be between 6s and 5m"},
		{"file ledger", func(c *pipeline.Config) { c.Ledger.Topic, c.Ledger.File = "", "/tmp/l.jsonl" }, 0, "ledger.lease_session_timeout: only with ledger.topic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Ledger.Budget = map[string]float64{"stream": 10}
			tc.edit(&c)
			err := c.Validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.LeaseSessionTimeout(); got != tc.want {
				t.Fatalf("LeaseSessionTimeout() = %v, want %v", got, tc.want)
			}
		})
	}
	y := "kafka: {brokers: [\"127.0.0.1:9092\"]}\ninput: {topic: in}\nschema: {time_max: 10, cohorts: [a]}\nsanitizers: {key_file: k}\n" +
		"output: {sanitized_topic: s, dead_letter_topic: d, fit_topic: f}\n" +
		"aggregators: [{name: km, kind: km, epsilon: 1, window: {size: 1h}}]\n" +
		"ledger: {topic: l, lease_session_timeout: 8s, budget: {stream: 5}}\n"
	c, err := pipeline.ParseConfig([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaseSessionTimeout() != 8*time.Second {
		t.Fatalf("parsed lease_session_timeout %v, want 8s", c.LeaseSessionTimeout())
	}
}

// lostAckBackend persists every append to Memory but reports the first
// failAppends of them as failed: an acknowledgement lost in a broker
// outage. With persist false the failed appends are not persisted.
type lostAckBackend struct {
	ledger.Memory
	failAppends int
	persist     bool
}

func (b *lostAckBackend) Append(ctx context.Context, e ledger.Entry) error {
	if b.failAppends > 0 {
		b.failAppends--
		if b.persist {
			if err := b.Memory.Append(ctx, e); err != nil {
				return err
			}
		}
		return errors.New("write ledger: connection reset before the acknowledgement")
	}
	return b.Memory.Append(ctx, e)
}

// TestLedgerRetryAfterAmbiguousAppend: an append that fails after its entry
// was persisted (a lost acknowledgement, as in a broker restart) must not
// lead the retried release to draw new noise and append a second, different
// entry for the window — that window would be published with one noise and
// re-emitted with the other after the next restart, charged once. The retry
// replays the persisted entry; an append that really failed is drawn anew.
func TestLedgerRetryAfterAmbiguousAppend(t *testing.T) {
	for _, tc := range []struct {
		name        string
		persist     bool
		wantRelease string
		wantReplay  bool
		wantEntries int
	}{
		{"lost acknowledgement", true, `{"draw":1}`, true, 1},
		{"failed append", false, `{"draw":2}`, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := &lostAckBackend{failAppends: 1, persist: tc.persist}
			l, err := ledger.Open(ctx, b, ledger.Options{Budget: map[string]float64{"stream": 10}})
			if err != nil {
				t.Fatal(err)
			}
			draws := 0
			build := func(map[string]float64) ([]byte, error) {
				draws++
				return []byte(fmt.Sprintf(`{"draw":%d}`, draws)), nil
			}
			if _, _, err := l.Release(ctx, "km/0", []string{"stream"}, 1, build); err == nil {
				t.Fatal("the first release did not report the failed append")
			}
			got, replay, err := l.Release(ctx, "km/0", []string{"stream"}, 1, build)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wantRelease || replay != tc.wantReplay {
				t.Fatalf("retry released %s (replay %v), want %s (replay %v)", got, replay, tc.wantRelease, tc.wantReplay)
			}
			if n := len(b.Entries()); n != tc.wantEntries {
				t.Fatalf("%d ledger entries for one window, want %d", n, tc.wantEntries)
			}
			if s := l.Spent("stream"); s != 1 {
				t.Fatalf("spent %v, want 1", s)
			}
			// A restart replays what was published.
			l2, err := ledger.Open(ctx, &b.Memory, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if again, ok := l2.Lookup("km/0"); !ok || string(again) != string(got) {
				t.Fatalf("after a restart the ledger holds %s, published %s", again, got)
			}
		})
	}
}
