package ops_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ops"
)

// durableBroker is an embedded broker (4 partitions a topic) whose log is
// synced to a directory, so that it can be stopped and restarted on the
// same address with its topics, offsets and committed groups intact: the
// broker outage of the fault tests.
type durableBroker struct {
	t    *testing.T
	opts broker.Options
	cur  *broker.Cluster
	addr string
}

// startDurableBroker starts a durableBroker, closed at cleanup.
func startDurableBroker(t *testing.T) *durableBroker {
	t.Helper()
	d := &durableBroker{t: t, opts: broker.Options{DataDir: t.TempDir(), SyncWrites: true, Partitions: 4}}
	b, err := broker.Start(d.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	d.cur, d.addr = b, b.Addrs()[0]
	d.opts.Listen = d.addr
	return d
}

// stop closes the broker (the outage begins).
func (d *durableBroker) stop() {
	d.t.Helper()
	if err := d.cur.Close(); err != nil {
		d.t.Fatal(err)
	}
}

// restart starts the broker again on its address from its directory.
func (d *durableBroker) restart() {
	d.t.Helper()
	b, err := broker.Start(d.opts)
	if err != nil {
		d.t.Fatalf("restart broker on %s: %v", d.addr, err)
	}
	d.t.Cleanup(func() { _ = b.Close() })
	d.cur = b
}

// terminate sends p SIGTERM and waits up to within for it to exit; the
// error says how it did not exit 0 in time.
func terminate(p *dpsurvProcess, within time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal: %w", err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("after SIGTERM: %w, want exit 0", p.err)
		}
		return nil
	case <-time.After(within):
		return fmt.Errorf("did not stop within %v of SIGTERM", within)
	}
}

// checkReleases reads cfg's fit topic and ledger topic and checks the
// releases on them with opts (ops.CheckReleases); it returns the report
// and the ledger entries.
func checkReleases(t *testing.T, ctx context.Context, conn kafkaconn.Config, cfg app.Config, opts ops.ReleaseOptions) (ops.ReleaseReport, []ledger.Entry) {
	t.Helper()
	fits, err := ops.ReadTopic(ctx, conn, cfg.Output.FitTopic)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ops.ReadLedger(ctx, conn, cfg.Ledger.Topic)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ops.CheckReleases(fits, entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep, entries
}
