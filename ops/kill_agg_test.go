package ops_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/internal/testtier"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// scrapeClient reads the child processes' /metrics uncompressed: asked
// for gzip (Go's default), promhttp deflated every scrape, which took
// most of a -race-built child's serving CPU.
var scrapeClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableCompression: true}}

// scrapeMetric sums the samples of a metric on a process's /metrics whose
// labels include every pair in labels; ok is false when the endpoint is
// unreachable.
func scrapeMetric(addr, name string, labels map[string]string) (v float64, ok bool) {
	resp, err := scrapeClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer metric name
		}
		sp := strings.LastIndexByte(rest, ' ')
		if sp < 0 {
			continue
		}
		match := true
		for k, want := range labels {
			if !strings.Contains(rest[:sp], k+"="+strconv.Quote(want)) {
				match = false
			}
		}
		if !match {
			continue
		}
		x, err := strconv.ParseFloat(rest[sp+1:], 64)
		if err == nil {
			v += x
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return v, sc.Err() == nil
}

// TestKillAggregatorLeaseHolder runs two real `dpsurv run --config`
// processes with a km and a weibull aggregator (3 s processing-time
// windows, Kafka ledger, lease session 6 s) while records stream in,
// SIGKILLs the lease holder in the middle of a window, lets the survivor
// take over, and then checks the fit and ledger topics with
// ops.CheckReleases: every release key carries identical bytes wherever it
// appears (equal to the ledger's stored copy), one ledger entry per
// released window with the aggregate's epsilon, budget_remaining.stream
// after the k-th charge = budget - the first k charges, and every released
// window published. Windows may be missing only where they overlap the
// failover gap (from the kill to the survivor's first release): the
// service does not release windows it was down for. Every record is in
// exactly one released km window: the km n summed over all windows
// (noisy, 5 SD bound) equals the number of records produced.
//
// The configured sessions (6 s, not the 10 s defaults) are checked where
// they act, at the broker: every JoinGroup of the lease group and of the
// aggregators' input group asks for a 6 s session, and the broker evicts a
// silent member after exactly that (kfake, like Kafka). The failover is
// also bounded in time from the kill: the session, plus at most
// failoverMargin for the survivor to notice, rejoin and start its
// aggregators (about 1 s idle, 10 s measured at load 25 under -race).
func TestKillAggregatorLeaseHolder(t *testing.T) {
	testtier.Full(t, "multi-process fault test")
	t.Parallel()
	// A deadline that only bounds a hang: the test waits on conditions.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	cl, conn := brokertest.Start(t, broker.Options{Partitions: 4})
	conn.ClientID = "ops-killagg"
	// The session timeout every JoinGroup asks for, by group.
	var joinMu sync.Mutex
	joinSessions := map[string]map[int32]int{}
	cl.Kfake().ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if jr, ok := req.(*kmsg.JoinGroupRequest); ok {
			joinMu.Lock()
			if joinSessions[jr.Group] == nil {
				joinSessions[jr.Group] = map[int32]int{}
			}
			joinSessions[jr.Group][jr.SessionTimeoutMillis]++
			joinMu.Unlock()
		}
		return nil, nil, false // observe only: the broker handles it
	})
	keyFile := filepath.Join(dir, "prf.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("5e", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const (
		window     = 3 * time.Second
		kmEps      = 4.0 // small noise on n, for the record-count check
		weibullEps = 0.5
		budget     = 1000.0
		// session is both ledger.lease_session_timeout and
		// input.session_timeout below.
		session = 6 * time.Second
		// failoverMargin bounds, beyond the session, the survivor's
		// detection (a heartbeat), rejoin and aggregator start-up
		// (ledger, checkpoint, sinks), and this test's polling: it
		// bounds a hang, not the speed of a loaded machine.
		failoverMargin = 30 * time.Second
		// drain is ledger.drain_timeout: the survivor's stop at the end
		// publishes every window it has charged within half of it, or
		// leaves one in its checkpoint for a next holder this test does
		// not start (and then fails the every-release-published check).
		// The default 10 s (5 s to publish) was too short once at load 19,
		// where the in-process broker timed out; a drain ends as soon as
		// its work is done, so a long bound costs nothing.
		drain = 60 * time.Second
	)
	addrs := [2]string{opsFreeAddr(t), opsFreeAddr(t)}
	var cfgFiles [2]string
	for i := range cfgFiles {
		cfgFiles[i] = filepath.Join(dir, fmt.Sprintf("replica-%d.yaml", i))
		yaml := fmt.Sprintf(`kafka: {brokers: [%q], client_id: ops-killagg-%d}
input: {topic: agg.in, group_id: ops-killagg, format: arrow, max_batch: 4, partitions: 4, session_timeout: 6s}
schema: {time_unit: days, time_max: 4000, cohorts: [ops-alpha, ops-beta, ops-gamma], public: [event]}
sanitizers:
  key_file: %q
  time: {mechanism: te, epsilon: 0.5, window: 10}
  cohort: {mechanism: rrr, epsilon: 1}
output: {sanitized_topic: agg.sanitized, dead_letter_topic: agg.deadletter, fit_topic: agg.fits}
aggregators:
  - {name: km-3s, kind: km, epsilon: %g, window: {size: 3s}, params: {method: noisy-histogram, bin_width: 1000}}
  - {name: weibull-3s, kind: weibull, epsilon: %g, window: {size: 3s}, params: {bin_width: 50, rungs: 200, interval_sims: -1}}
ledger: {topic: agg.ledger, checkpoint_interval: 1s, lease_session_timeout: 6s, drain_timeout: %v, budget: {stream: %g}}
http: {listen: %q}
log: {level: info}
`, cl.Addrs()[0], i, keyFile, kmEps, weibullEps, drain, budget, addrs[i])
		if err := os.WriteFile(cfgFiles[i], []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := app.LoadConfig(cfgFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	opsEnsureTopics(t, ctx, conn, cfg)
	const perMsg, every = 25, 50 * time.Millisecond // 500 records/s
	d, msgs := opsCohortMessages(t, cfg, synth.Options{N: 8500, Cohorts: cfg.Schema.Cohorts, TimeMax: 4000, Seed: 61, IDPrefix: "rawid-killagg"}, perMsg, "killagg-")

	// midWindow waits for the middle of a 3 s window (wall clock, as the
	// processes' windows).
	midWindow := func() {
		for {
			if off := time.Since(time.Unix(time.Now().Unix()/3*3, 0)); off >= 1200*time.Millisecond && off < 1800*time.Millisecond {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	procs := [2]*dpsurvProcess{startDpsurv(t, "run", "--config", cfgFiles[0]), startDpsurv(t, "run", "--config", cfgFiles[1])}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica 0 log tail:\n%s\nreplica 1 log tail:\n%s", opsLogTail(procs[0].logs.String()), opsLogTail(procs[1].logs.String()))
		}
	})
	metric := func(i int, name string, labels map[string]string) float64 {
		v, _ := scrapeMetric(addrs[i], name, labels)
		return v
	}
	leader := func(i int) bool { return metric(i, "dpsurv_aggregator_leader", nil) == 1 }
	ready := func(i int) bool {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addrs[i] + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	// One holder, and the other replica ready as a standby.
	holder := -1
	if !waitPolled(ctx, 30*time.Second, func() bool {
		l0, l1 := leader(0), leader(1)
		if l0 == l1 || !ready(0) || !ready(1) {
			return false
		}
		holder = 0
		if l1 {
			holder = 1
		}
		return true
	}) {
		t.Fatalf("no single lease holder with both replicas ready (leader gauges %v, %v)", leader(0), leader(1))
	}
	standby := 1 - holder
	releases := func(i int) float64 {
		return metric(i, "dpsurv_releases_total", map[string]string{"aggregate": "km-3s"})
	}
	before := releases(holder)
	prodErr := make(chan error, 1)
	var producedAt time.Time // written before prodErr is sent
	go func() {
		err := opsProduceAt(ctx, conn, cfg.Input.Topic, msgs, 1, every)
		producedAt = time.Now()
		prodErr <- err
	}()

	// Kill the holder once it has released two windows since the records
	// began, in the middle of a window.
	if !waitPolled(ctx, 30*time.Second, func() bool { return releases(holder) >= before+2 }) {
		t.Fatalf("the holder released %v km windows", releases(holder))
	}
	midWindow()
	if c := metric(standby, "dpsurv_ledger_charges_total", nil); c != 0 {
		t.Fatalf("the standby charged the ledger %v times while the holder ran", c)
	}
	heldReleases := releases(holder)
	if err := procs[holder].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killAt := time.Now()
	<-procs[holder].done
	var ee *exec.ExitError
	if !errors.As(procs[holder].err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the holder ended with %v, want killed by SIGKILL", procs[holder].err)
	}

	// The survivor takes the lease after the lease session (6 s) and
	// resumes: its first release is the window the holder died in.
	// Its aggregators' input group hands it the partitions after the dead
	// member's session (input.session_timeout, 6 s) and it counts again.
	var leaseAt, resumedAt, countingAt time.Time
	if !waitPolled(ctx, session+failoverMargin+10*time.Second, func() bool {
		now := time.Now()
		if leaseAt.IsZero() && leader(standby) {
			leaseAt = now
		}
		if resumedAt.IsZero() && metric(standby, "dpsurv_releases_total", nil)+metric(standby, "dpsurv_releases_replayed_total", nil) > 0 {
			resumedAt = now
		}
		if countingAt.IsZero() && metric(standby, "dpsurv_aggregator_records_total", map[string]string{"aggregate": "km-3s"}) > 0 {
			countingAt = now
		}
		return !resumedAt.IsZero() && !countingAt.IsZero()
	}) {
		t.Fatalf("the survivor never resumed (leader %v, released since %v, counting since %v)", leader(standby), resumedAt, countingAt)
	}
	if leaseAt.IsZero() {
		leaseAt = resumedAt
	}
	takeover := leaseAt.Sub(killAt)
	// The configured sessions apply (not the 10 s defaults): the broker
	// evicts the dead holder after the session its JoinGroup asked for.
	joinMu.Lock()
	for _, g := range []string{cfg.LeaseGroupID(), cfg.AggregatorGroupID()} {
		js := joinSessions[g]
		if len(js) == 0 {
			t.Errorf("group %s: no JoinGroup seen by the broker", g)
		}
		for ms, n := range js {
			if time.Duration(ms)*time.Millisecond != session {
				t.Errorf("group %s: %d JoinGroup(s) asked for a %d ms session, want %v (ledger.lease_session_timeout, input.session_timeout)", g, n, ms, session)
			}
		}
	}
	joinMu.Unlock()
	if takeover >= session+failoverMargin {
		t.Errorf("the survivor took the lease %v after the kill, want under %v (lease_session_timeout %v + %v)", takeover, session+failoverMargin, session, failoverMargin)
	}
	if c := countingAt.Sub(killAt); c >= session+failoverMargin {
		t.Errorf("the survivor's aggregators counted records again %v after the kill, want under %v (input.session_timeout %v + %v)", c, session+failoverMargin, session, failoverMargin)
	}
	if err := <-prodErr; err != nil {
		t.Fatal(err)
	}

	// Every record checkpointed by the aggregators (their group's offsets
	// committed to the end), then the window holding that moment released.
	var caughtUp time.Time
	if !waitPolled(ctx, 30*time.Second, func() bool {
		lag, err := ops.GroupLag(ctx, conn, cfg.AggregatorGroupID(), cfg.Input.Topic)
		if err == nil && lag == 0 {
			caughtUp = time.Now()
			return true
		}
		return false
	}) {
		t.Fatal("the aggregators' offsets never reached the end of the input")
	}
	lastKey := aggregators.WindowKey("km-3s", caughtUp.Unix()/3*3)
	if !waitPolled(ctx, 15*time.Second, func() bool {
		return ledgerHas(ctx, conn, cfg.Ledger.Topic, lastKey)
	}) {
		t.Fatalf("window %s never released", lastKey)
	}
	// Mid-window, so that no release is being published when the
	// survivor stops (one would be published by the next holder).
	midWindow()
	survivor := procs[standby]
	if err := terminate(survivor, drain+30*time.Second); err != nil {
		t.Fatalf("the survivor %v", err)
	}

	rep, entries := checkReleases(t, ctx, conn, cfg, ops.ReleaseOptions{
		Epsilon: map[string]float64{"km-3s": kmEps, "weibull-3s": weibullEps},
		// beside a sanitized topic each add/remove-one window is charged
		// its replace-one cost
		Charged: map[string]float64{"km-3s": 2 * kmEps, "weibull-3s": 2 * weibullEps},
		Cohorts: cfg.Schema.Cohorts, StreamBudget: budget, Complete: true,
	})
	if rep.LedgerRepeats != 0 {
		t.Errorf("%d repeated ledger appends (identical), want none without a broker fault", rep.LedgerRepeats)
	}
	// Ledger totals: the stream scope's spent epsilon, recomputed by the
	// ledger from the topic, is exactly the released windows' charges
	// (2 epsilon each beside the sanitized topic).
	nkm, nwb := len(rep.Windows["km-3s"]), len(rep.Windows["weibull-3s"])
	wantSpent := 2 * (float64(nkm)*kmEps + float64(nwb)*weibullEps)
	led, err := ledger.Open(ctx, &ledger.Memory{}, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, _, err := led.Charge(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if s := led.Spent(ledger.ScopeStream); math.Abs(s-wantSpent) > 1e-9 || math.Abs(rep.Spent-wantSpent) > 1e-9 {
		t.Errorf("ledger spent %v (report %v), want 2 x (%d x %v + %d x %v) = %v", s, rep.Spent, nkm, kmEps, nwb, weibullEps, wantSpent)
	}

	// Missing windows only in the failover gap.
	size := int64(window / time.Second)
	for _, agg := range []string{"km-3s", "weibull-3s"} {
		ws := rep.Windows[agg]
		have := map[int64]bool{}
		for _, s := range ws {
			have[s] = true
		}
		var missing []int64
		for s := ws[0]; s <= ws[len(ws)-1]; s += size {
			if have[s] {
				continue
			}
			missing = append(missing, s)
			// Missing window [s, s+size) must overlap the failover gap
			// [killAt, the later of resumedAt and countingAt]: until the
			// survivor counts records again its windows are empty (the km
			// n total below shows no record was lost).
			gapEnd := resumedAt
			if countingAt.After(gapEnd) {
				gapEnd = countingAt
			}
			if !(s+size > killAt.Unix() && s <= gapEnd.Unix()) {
				t.Errorf("%s: window %d not released, outside the failover gap [%d, %d]", agg, s, killAt.Unix(), gapEnd.Unix())
			}
		}
		t.Logf("%s: %d windows released of %d elapsed from the first to the last; missing (failover gap): %v",
			agg, len(ws), rep.Elapsed(agg, window), missing)
	}
	if nkm < 5 || nwb < 5 {
		t.Errorf("only %d km and %d weibull windows released", nkm, nwb)
	}

	// Every record is in exactly one released km window. n per window and
	// cohort is the sum of 8 noisy cells (4 bins x events, censored),
	// two-sided geometric of scale 1/epsilon = 0.25 (add/remove-one): variance 2p/(1-p)^2,
	// p = exp(-epsilon). Clamping n at 0 in empty windows adds at most
	// 1 per (window, cohort) on average.
	p := math.Exp(-kmEps / km.KMCellSensitivity)
	sd := math.Sqrt(float64(nkm*len(cfg.Schema.Cohorts)*8) * 2 * p / ((1 - p) * (1 - p)))
	tol := 5*sd + float64(nkm*len(cfg.Schema.Cohorts))
	if diff := rep.N["km-3s"] - float64(len(d.Time)); math.Abs(diff) > tol {
		t.Errorf("km n summed over released windows = %.0f, want %d ± %.0f (records lost or counted twice)", rep.N["km-3s"], len(d.Time), tol)
	}
	for i, p := range procs {
		if l := p.logs.String(); strings.Contains(l, "rawid") || strings.Contains(l, "ops-alpha") {
			t.Errorf("replica %d logged a raw id or label", i)
		}
	}
	t.Logf("holder killed after %.0f km releases, %v into its window; survivor took the lease %v after the kill, released %v and counted records %v after the kill; production ended %v after the kill, offsets caught up %v after that",
		heldReleases, killAt.Sub(time.Unix(killAt.Unix()/3*3, 0)).Round(10*time.Millisecond), takeover.Round(100*time.Millisecond),
		resumedAt.Sub(killAt).Round(100*time.Millisecond), countingAt.Sub(killAt).Round(100*time.Millisecond), producedAt.Sub(killAt).Round(100*time.Millisecond), caughtUp.Sub(producedAt).Round(100*time.Millisecond))
	t.Logf("%d fit messages (%d repeated, identical), %d ledger entries (%d repeated); spent %.1f = %d x %v + %d x %v; km n total %.0f for %d records (tolerance %.0f)",
		rep.FitMessages, rep.FitDuplicates, rep.LedgerRecords, rep.LedgerRepeats, rep.Spent, nkm, kmEps, nwb, weibullEps, rep.N["km-3s"], len(d.Time), tol)
}

// midWindowOf waits for the middle of a processing-time window of size
// (the wall clock, as the service's), so that no window closes just then.
func midWindowOf(ctx context.Context, size time.Duration) {
	for ctx.Err() == nil {
		now := time.Now()
		if off := now.Sub(now.Truncate(size)); off >= size*2/5 && off < size*3/5 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ledgerHas reports whether the ledger topic holds key.
func ledgerHas(ctx context.Context, conn kafkaconn.Config, topic, key string) bool {
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

// TestAggregatorsBrokerRestart stops the broker (data dir, synced
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
func TestAggregatorsBrokerRestart(t *testing.T) {
	testtier.Full(t, "broker-restart fault test")
	// A deadline that only bounds a hang (52 s of the former 58 s were
	// used at load 12-20): the test waits on conditions.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	db := startDurableBroker(t)
	addr := db.addr
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
	opsEnsureTopics(t, ctx, conn, cfg)
	d, msgs := opsCohortMessages(t, cfg, synth.Options{N: 5000, Cohorts: cfg.Schema.Cohorts, TimeMax: 4000, Seed: 71, IDPrefix: "rawidar"}, 25, "aggrestart-")
	half := len(msgs) / 2
	logs := &apptest.Logs{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log tail:\n%s", opsLogTail(logs.String()))
		}
	})
	key := bytes.Repeat([]byte{0x5e}, 32)
	sv := opsSupervise(t, ctx, func() *app.Service {
		return &app.Service{Config: cfg, Key: key, Log: logs.Logger(), AggregatorTick: 50 * time.Millisecond}
	})
	waitFor := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		if !waitPolled(ctx, timeout, cond) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	// Phase 1: 2,500 records over about 2.5 s; the outage starts mid-window
	// once two windows with records are released.
	startUnix := time.Now().Unix()
	if err := opsProduceAt(ctx, conn, cfg.Input.Topic, msgs[:half], 1, 25*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	s0 := (startUnix + 2) / 2 * 2 // the first window that starts after the records began
	waitFor("two windows released before the outage", time.Minute, func() bool {
		return ledgerHas(ctx, conn, cfg.Ledger.Topic, aggregators.WindowKey("km", s0+2))
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
	db.stop()
	stopAt := time.Now()
	time.Sleep(2500 * time.Millisecond) // the outage: across a window boundary
	db.restart()
	upAt := time.Now()
	// The aggregators resume: a charge that was not in the ledger before.
	var resumedAt time.Time
	waitFor("the aggregators to release after the restart", time.Minute, func() bool {
		es, err := ops.ReadLedger(ctx, conn, cfg.Ledger.Topic)
		if err == nil && len(es) > len(before) {
			resumedAt = time.Now()
			return true
		}
		return false
	})

	// Phase 2: the other half, then wait until every record is in a
	// checkpoint and the window holding that moment is released.
	if err := opsProduceAt(ctx, conn, cfg.Input.Topic, msgs[half:half+1], 1, 25*time.Millisecond); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	// Windows before the first record of phase 2 is in the broker are
	// empty (under load it lands well after the aggregators resume).
	phase2At := time.Now()
	if err := opsProduceAt(ctx, conn, cfg.Input.Topic, msgs[half+1:], 1, 25*time.Millisecond); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	var caughtUp time.Time
	waitFor("the aggregators' offsets to reach the end of the input", time.Minute, func() bool {
		lag, err := ops.GroupLag(ctx, conn, cfg.AggregatorGroupID(), cfg.Input.Topic)
		if err == nil && lag == 0 {
			caughtUp = time.Now()
			return true
		}
		return false
	})
	last := aggregators.WindowKey("km", caughtUp.Truncate(size).Unix())
	waitFor("window "+last, time.Minute, func() bool { return ledgerHas(ctx, conn, cfg.Ledger.Topic, last) })
	midWindowOf(ctx, size)
	sv.stop()

	rep, _ := checkReleases(t, ctx, conn, cfg, ops.ReleaseOptions{
		Epsilon: map[string]float64{"km": kmEps, "weibull": wbEps},
		Charged: map[string]float64{"km": 2 * kmEps, "weibull": 2 * wbEps},
		Cohorts: cfg.Schema.Cohorts, StreamBudget: budget, Complete: true,
	})
	nkm, nwb := len(rep.Windows["km"]), len(rep.Windows["weibull"])
	if want := 2 * (float64(nkm)*kmEps + float64(nwb)*wbEps); math.Abs(rep.Spent-want) > 1e-9 {
		t.Errorf("ledger spent %v, want 2 x (%d x %v + %d x %v) = %v", rep.Spent, nkm, kmEps, nwb, wbEps, want)
	}
	// Missing windows only where the outage was. The outage can end the
	// aggregator lease's generation after the first release that follows
	// it (its session runs out on the restarted broker): the aggregators
	// then stop and start again, and the windows of that restart are not
	// released either (the service does not release windows it was not
	// running for). The rejoin ends at the aggregators' last start
	// ("aggregators starting", logged before their first Tick) when that
	// is later than the first release after the outage.
	sz := int64(size / time.Second)
	var missing []int64
	gapEnd := resumedAt
	if phase2At.After(gapEnd) {
		gapEnd = phase2At
	}
	starts := logTimes(logs.String(), "aggregators starting")
	if n := len(starts); n > 0 && starts[n-1].After(stopAt) && starts[n-1].After(gapEnd) {
		gapEnd = starts[n-1]
	}
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
			// Window [s, s+sz) must overlap the outage and the rejoin, up
			// to the latest of the aggregators' resumption, their last
			// start and phase 2's first record (the km n total below shows
			// no record was lost).
			if !(s+sz > stopAt.Unix() && s <= gapEnd.Unix()) {
				t.Errorf("%s: window %d not released, outside the outage and rejoin [%d, %d]", agg, s, stopAt.Unix(), gapEnd.Unix())
			}
		}
	}
	// Every record in exactly one released km window (as in the kill
	// test: 3 cohorts x 8 noisy cells per window, scale 1/epsilon).
	p := math.Exp(-kmEps / km.KMCellSensitivity)
	sd := math.Sqrt(float64(nkm*len(cfg.Schema.Cohorts)*8) * 2 * p / ((1 - p) * (1 - p)))
	tol := 5*sd + float64(nkm*len(cfg.Schema.Cohorts))
	if math.Abs(rep.N["km"]-float64(len(d.Time))) > tol {
		t.Errorf("km n summed over released windows = %.0f, want %d ± %.0f (records lost or counted twice)", rep.N["km"], len(d.Time), tol)
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
	t.Logf("aggregators started %d time(s); outage and rejoin [%d, %d]", len(starts), stopAt.Unix(), gapEnd.Unix())
	t.Logf("broker down %v, aggregators releasing again %v after it came back; log: %d failed checkpoints, %d failed releases, %d failed fit writes, %d lease generations ended, %d windows re-emitted from the ledger",
		upAt.Sub(stopAt).Round(100*time.Millisecond), resumedAt.Sub(upAt).Round(100*time.Millisecond),
		strings.Count(l, "checkpoint failed"), strings.Count(l, "window release failed"), strings.Count(l, "fit topic write failed"),
		strings.Count(l, "lease generation ended"), strings.Count(l, "re-emitted from the ledger"))
	t.Logf("broker down %v; km: %d windows released of %d elapsed (missing %v), weibull: %d of %d; %d fit messages (%d repeated, identical); %d ledger entries (%d repeated appends, identical); spent %.1f; km n total %.0f for %d records (tolerance %.0f); %d supervisor restart(s)",
		upAt.Sub(stopAt).Round(100*time.Millisecond), nkm, rep.Elapsed("km", size), missing, nwb, rep.Elapsed("weibull", size),
		rep.FitMessages, rep.FitDuplicates, rep.LedgerRecords, rep.LedgerRepeats, rep.Spent, rep.N["km"], len(d.Time), tol, len(exits))
}

// logTimes returns the times of a JSON log's lines whose msg is msg.
func logTimes(log, msg string) []time.Time {
	var out []time.Time
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			TS  float64 `json:"ts"`
			Msg string  `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg {
			out = append(out, time.Unix(0, int64(l.TS*1e9)))
		}
	}
	return out
}

// TestCheckReleases feeds CheckReleases a consistent fit topic and ledger,
// then versions with one fault each: every fault must be reported.
func TestCheckReleases(t *testing.T) {
	cohorts := []string{"A", "B"}
	const budget = 10.0
	eps := map[string]float64{"km": 1, "wb": 0.5}
	// entry builds the ledger entry of window start of agg as the k-th
	// charge (spent before it: spentBefore); noise varies the bytes.
	entry := func(agg string, start int64, spentBefore float64, noise string) ledger.Entry {
		e := eps[agg]
		var msgs []string
		for _, c := range cohorts {
			key := aggregators.MessageKey(agg, start, c)
			v := fmt.Sprintf(`{"key":%q,"aggregate":%q,"window_start_unix":%d,"cohort":%q,"epsilon":%v,"epsilon_charged":%v,"budget_remaining":{"stream":%v},"n":%s}`,
				key, agg, start, c, e, e, budget-spentBefore-e, noise)
			msgs = append(msgs, fmt.Sprintf(`{"key":%q,"value":%s}`, key, v))
		}
		rel := fmt.Sprintf(`{"aggregate":%q,"window_start_unix":%d,"messages":[%s]}`, agg, start, strings.Join(msgs, ","))
		return ledger.Entry{Key: aggregators.WindowKey(agg, start), Epsilon: e, Release: []byte(rel),
			Scopes: []string{"aggregate:" + agg, "cohort:A", "cohort:B", "stream"}}
	}
	fitsOf := func(es ...ledger.Entry) []ops.KeyValue {
		var out []ops.KeyValue
		for _, e := range es {
			var doc struct {
				Messages []struct {
					Key   string
					Value json.RawMessage
				}
			}
			if err := json.Unmarshal(e.Release, &doc); err != nil {
				t.Fatal(err)
			}
			for _, m := range doc.Messages {
				out = append(out, ops.KeyValue{Key: []byte(m.Key), Value: m.Value})
			}
		}
		return out
	}
	e1, e2, e3 := entry("km", 3, 0, "10"), entry("wb", 3, 1, "null"), entry("km", 6, 1.5, "12")
	good := []ledger.Entry{e1, e2, e3}
	statement := func(schema string, centralCap string) ops.KeyValue {
		return ops.KeyValue{Key: []byte(schemas.PatientStatementKey), Value: []byte(fmt.Sprintf(
			`{"schema":%q,"key":%q,"kind":%q,"statement":{"central_cap":%s}}`, schema, schemas.PatientStatementKey, schemas.PatientStatementKind, centralCap))}
	}
	withStatement := func(st ops.KeyValue, kv []ops.KeyValue) []ops.KeyValue {
		return append([]ops.KeyValue{st}, kv...)
	}
	okStatement := statement(schemas.PatientStatementSchemaName, "10")
	// e1 re-emitted: identical duplicates; the statement first, as the
	// service publishes it
	goodFits := withStatement(okStatement, append(fitsOf(good...), fitsOf(e1)...))
	e1b := entry("km", 3, 0, "11") // the same window with other noise
	e3x := entry("km", 6, 2, "12") // budget_remaining as if a charge were missing
	e3x.Key = e3.Key
	tamper := func(kv []ops.KeyValue, i int) []ops.KeyValue {
		out := append([]ops.KeyValue(nil), kv...)
		out[i].Value = []byte(strings.Replace(string(out[i].Value), `"n":10`, `"n":10.5`, 1))
		return out
	}
	wrongEps := e2
	wrongEps.Epsilon = 1
	cases := []struct {
		name     string
		fits     []ops.KeyValue
		entries  []ledger.Entry
		complete bool
		want     string // "" = no error
	}{
		{"consistent", goodFits, good, true, ""},
		{"repeated identical append", goodFits, append(append([]ledger.Entry{}, good...), e1), true, ""},
		{"window charged twice with other noise", goodFits, []ledger.Entry{e1, e2, e3, e1b}, true, "appended twice with different releases"},
		{"fit differs from the ledger", tamper(goodFits, 1), good, true, "differs from the ledger"},
		{"duplicate with other bytes", tamper(goodFits, len(goodFits)-2), good, true, "published twice with different bytes"},
		{"fit without a charge", fitsOf(good...), good[:2], false, "has no ledger entry"},
		{"no privacy statement", append(fitsOf(good...), fitsOf(e1)...), good, true, "no per-patient privacy statement"},
		{"no privacy statement, not required", append(fitsOf(good...), fitsOf(e1)...), good, false, ""},
		{"statement of another schema", withStatement(statement(schemas.FitSchemaName, "10"), fitsOf(good...)), good, true, "privacy statement: schema"},
		{"statement cap above the stream budget", withStatement(statement(schemas.PatientStatementSchemaName, "20"), fitsOf(good...)), good, true, "stream budget 10 binds"},
		{"statement without a cap", withStatement(statement(schemas.PatientStatementSchemaName, "null"), fitsOf(good...)), good, true, "stream budget 10 binds"},
		{"released but not published", fitsOf(e1, e2), good, true, "never reached the fit topic"},
		{"not published, not required", fitsOf(e1, e2), good, false, ""},
		{"charge missing from the totals", fitsOf(e1, e2, e3x), []ledger.Entry{e1, e2, e3x}, true, "budget_remaining.stream"},
		{"wrong epsilon", fitsOf(e1, wrongEps), []ledger.Entry{e1, wrongEps}, true, "charged epsilon"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := ops.CheckReleases(tc.fits, tc.entries, ops.ReleaseOptions{Epsilon: eps, Cohorts: cohorts, StreamBudget: budget, Complete: tc.complete})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if rep.Released() != 3 || rep.Spent != 2.5 || rep.N["km"] != 44 || rep.Elapsed("km", 3*time.Second) != 2 {
					t.Fatalf("report %+v: want 3 windows, spent 2.5, km n 44, 2 km windows elapsed", rep)
				}
				return
			}
			if !errors.Is(err, ops.ErrReleases) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrReleases with %q", err, tc.want)
			}
		})
	}
}
