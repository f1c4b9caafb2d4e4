package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd/configtest"
)

// waitForLog returns the nth JSON log line whose msg is msg; it fails the
// test when none comes within 30 s.
func waitForLog(t *testing.T, logs *apptest.Logs, msg string, n int) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ls := logs.Lines(msg); len(ls) >= n {
			return ls[n-1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %d× %q in the log:\n%s", n, msg, logs.String())
	return nil
}

func strs(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, x := range a {
			out = append(out, x.(string))
		}
	}
	return out
}

// SIGHUP reloads the config of `dpsurv run` instead of killing the process
// (exit 129 on the old main, which ends this test binary): the log level
// and a raised budget apply at once (dpsurv_privacy_budget_limit shows the
// new limit), a changed topic is logged as needing a restart, a lowered
// budget is refused, a config that no longer loads is refused with its
// error, and the service keeps running throughout. The broker is
// unreachable on purpose: the service is alive and not ready.
func TestRunReloadsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	cfg := func(level, topic, budget string) string {
		return configtest.Config{
			Key:      key,
			Topic:    topic,
			FitTopic: true,
			More: `aggregators:
  - {name: km-weekly, kind: km, epsilon: 0.5, window: {size: 168h}}
ledger: {file: ` + filepath.Join(dir, "ledger.jsonl") + `, budget: {stream: ` + budget + `}}
http: {listen: "127.0.0.1:0"}
log: {level: ` + level + `}
`,
		}.YAML()
	}
	p := filepath.Join(dir, "c.yaml")
	write := func(s string) {
		t.Helper()
		configtest.Write(t, p, s)
	}
	write(cfg("info", "in", "1"))
	var logs apptest.Logs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runService(ctx, Env{Stdout: io.Discard, Stderr: &logs}, []string{"--config", p}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("dpsurv run did not stop")
		}
	})
	up := waitForLog(t, &logs, "health and metrics endpoints up", 1)
	addr, _ := up["addr"].(string)
	limit := func() string {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, `dpsurv_privacy_budget_limit{scope="stream"}`) {
				return strings.Fields(l)[1]
			}
		}
		t.Fatalf("no stream budget limit in /metrics")
		return ""
	}
	if got := limit(); got != "1" {
		t.Fatalf("limit %s before the reload", got)
	}
	hup := func() {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}

	write(cfg("debug", "in2", "2"))
	hup()
	rep := waitForLog(t, &logs, "config reloaded", 1)
	if a := strings.Join(strs(rep["applied"]), "; "); a != "log.level: info -> debug; ledger.budget.stream: 1 -> 2" {
		t.Errorf("applied %q", a)
	}
	if r := strs(rep["need_restart"]); len(r) != 1 || r[0] != "input.topic" {
		t.Errorf("need_restart %q, want [input.topic]", r)
	}
	if got := limit(); got != "2" {
		t.Errorf("limit %s after raising the budget to 2", got)
	}

	write(cfg("debug", "in2", "0.5"))
	hup()
	rep = waitForLog(t, &logs, "config reloaded", 2)
	if r := strings.Join(strs(rep["refused"]), "; "); !strings.Contains(r, "ledger.budget.stream: 0.5 is below the running 2") {
		t.Errorf("refused %q", r)
	}
	if got := limit(); got != "2" {
		t.Errorf("limit %s after a refused lowering", got)
	}

	write("kafka: {brokers: [")
	hup()
	bad := waitForLog(t, &logs, "config reload refused; running on the config in force", 1)
	if e, _ := bad["error"].(string); !strings.Contains(e, "parse config") {
		t.Errorf("refusal error %q", e)
	}
	select {
	case err := <-done:
		t.Fatalf("dpsurv run ended after SIGHUP: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("dpsurv run: %v", err)
	}
	done <- nil // for the cleanup
}
