package ops_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/internal/testtier"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops/harness"
)

// TestOpsBrokerRestartMidStream stops the broker while the service is
// consuming a backlog and starts it again on the same address and data
// directory. The service runs under a supervisor, as `dpsurv run` does in
// production: today a failed offset commit during the outage ends the
// process once (see docs/operations.md), and the restarted process waits,
// not ready, for the broker. The outage must cost at most that one restart,
// the service must be ready again afterwards, and every record must reach
// the sanitized topic exactly as one process would sanitize it
// (redeliveries byte-identical).
func TestOpsBrokerRestartMidStream(t *testing.T) {
	testtier.Full(t, "broker-restart fault test")
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	t.Cleanup(cancel)
	db := startDurableBroker(t)
	addr := db.addr
	conn := kafkaconn.Config{Brokers: []string{addr}, ClientID: "ops-restart"}
	cfg := opsConfig(conn, "ops-restart")
	cfg.HTTP.Listen = opsFreeAddr(t)
	opsEnsureTopics(t, ctx, conn, cfg)
	in := opsNewInput(t, cfg, opsKey, 8000, 25, 50, "restart")
	half := len(in.msgs) / 2
	if err := harness.Produce(ctx, conn, cfg.Input.Topic, in.msgs[:half], nil); err != nil {
		t.Fatal(err)
	}
	logs := &apptest.Logs{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log tail:\n%s", opsLogTail(logs.String()))
		}
	})
	sv := opsSupervise(t, ctx, func() *app.Service {
		return &app.Service{Config: cfg, Key: opsKey, Log: logs.Logger()}
	})

	// Mid-stream: some of the first half acknowledged, not all of it.
	if !harness.WaitFor(ctx, 30*time.Second, func() bool { return sv.acked() >= half/8 }) {
		t.Fatalf("acked %d of %d before the restart", sv.acked(), half)
	}
	db.stop()
	ackedAtStop := sv.acked()
	time.Sleep(1500 * time.Millisecond) // the outage
	db.restart()
	if err := harness.Produce(ctx, conn, cfg.Input.Topic, in.msgs[half:], nil); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	out := opsCollectExact(t, ctx, conn, cfg.Output.SanitizedTopic, "ops-restart-reader", in.want)
	if !harness.WaitFor(ctx, 10*time.Second, func() bool {
		resp, err := http.Get("http://" + cfg.HTTP.Listen + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Error("service not ready again after the broker came back")
	}
	sv.stop()
	exits := sv.exitErrors()
	for _, e := range exits {
		t.Logf("service exited (a supervisor restarted it): %v", e)
	}
	// One outage may end one process (it then waits, not ready, for the
	// broker on start); more exits would be a crash loop.
	if len(exits) > 1 {
		t.Errorf("%d exits for one broker outage, want at most 1", len(exits))
	}
	t.Logf("acked %d of %d messages when the broker stopped; %d supervisor restart(s); %d distinct sanitized messages, %d redelivered (identical)",
		ackedAtStop, len(in.msgs), len(exits), out.Distinct, out.Duplicates)
	if ackedAtStop >= half {
		t.Errorf("the broker stopped after the first half was consumed (%d of %d): not mid-stream", ackedAtStop, half)
	}
}

// opsLogTail is the end of a log, for failure messages.
func opsLogTail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
