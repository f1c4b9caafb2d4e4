package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/internal/testtier"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/cmd/dpsurv/cli"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/synth"
)

// helperEnv carries the dpsurv arguments (a JSON list) to a re-executed
// test binary: see TestHelperProcess.
const helperEnv = "DPSURV_OPS_HELPER_ARGS"

// TestHelperProcess is not a test: when the test binary is re-executed
// with helperEnv set, it runs the dpsurv command line with those
// arguments and exits with its code, so the kill test can run real
// `dpsurv run` processes without a separate build. Without the variable it
// returns at once.
func TestHelperProcess(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintf(os.Stderr, "helper: bad %s: %v\n", helperEnv, err)
		os.Exit(2)
	}
	os.Exit(cli.Main(args, os.Stdout, os.Stderr))
}

// dpsurvProcess is a `dpsurv` child process with its stderr captured.
type dpsurvProcess struct {
	cmd  *exec.Cmd
	logs *apptest.Logs
	done chan struct{}
	err  error
}

func startDpsurv(t *testing.T, args ...string) *dpsurvProcess {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(raw))
	return startProcess(t, cmd, args)
}

// startProcess starts cmd with its stderr collected, and kills it when the
// test ends.
func startProcess(t *testing.T, cmd *exec.Cmd, args []string) *dpsurvProcess {
	t.Helper()
	p := &dpsurvProcess{cmd: cmd, logs: &apptest.Logs{}, done: make(chan struct{})}
	cmd.Stdout = io.Discard
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dpsurv %v: %v", args, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *dpsurvProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

var messagesInRe = regexp.MustCompile(`(?m)^dpsurv_messages_in_total (\S+)$`)

// scrapeMessagesIn scrapes dpsurv_messages_in_total from the process's /metrics
// (-1 when unavailable).
func scrapeMessagesIn(addr string) float64 {
	resp, err := scrapeClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := messagesInRe.FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1
	}
	return v
}

// TestKillReplicaMidStream runs two real `dpsurv run --config`
// processes in one consumer group, kills one with SIGKILL while both are
// consuming a stream, and checks that the survivor takes over the dead
// replica's partitions (after the group's session timeout, 30 s with the
// kafka-go default) and that every record reaches the sanitized topic
// exactly as one process would sanitize it, redelivered messages
// byte-identical. The survivor then stops cleanly on SIGTERM (exit 0).
func TestKillReplicaMidStream(t *testing.T) {
	testtier.Full(t, "multi-process fault test")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 58*time.Second)
	t.Cleanup(cancel)
	dir := t.TempDir()
	cl, conn := brokertest.Start(t, broker.Options{Partitions: 4, DataDir: filepath.Join(dir, "broker")})
	conn.ClientID = "ops-kill"
	keyFile := filepath.Join(dir, "prf.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("4f", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := [2]string{opsFreeAddr(t), opsFreeAddr(t)}
	var cfgFiles [2]string
	for i := range cfgFiles {
		cfgFiles[i] = filepath.Join(dir, fmt.Sprintf("replica-%d.yaml", i))
		yaml := fmt.Sprintf(`kafka: {brokers: [%q], client_id: ops-kill-%d}
input: {topic: ops.in, group_id: ops-kill, format: arrow, max_batch: 4, partitions: 4}
schema: {time_unit: days, time_max: 4000, cohorts: [ops-alpha, ops-beta, ops-gamma], public: [event]}
sanitizers:
  key_file: %q
  time: {mechanism: te, epsilon: 0.5, window: 10}
  cohort: {mechanism: rrr, epsilon: 1}
output: {sanitized_topic: ops.sanitized, dead_letter_topic: ops.deadletter}
http: {listen: %q}
log: {level: info}
`, cl.Addrs()[0], i, keyFile, addrs[i])
		if err := os.WriteFile(cfgFiles[i], []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := app.LoadConfig(cfgFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := app.ReadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	opsEnsureTopics(t, ctx, conn, cfg)
	_, msgs := opsCohortMessages(t, cfg, synth.Options{N: 6000, Cohorts: cfg.Schema.Cohorts, TimeMax: 4000, Seed: 60, IDPrefix: "rawid-kill"}, 25, "kill-")
	want, err := ops.Reference(cfg, key, msgs)
	if err != nil {
		t.Fatal(err)
	}

	a := startDpsurv(t, "run", "--config", cfgFiles[0])
	b := startDpsurv(t, "run", "--config", cfgFiles[1])
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica A log tail:\n%s\nreplica B log tail:\n%s", opsLogTail(a.logs.String()), opsLogTail(b.logs.String()))
		}
	})
	if _, err := kafkaconn.WaitForGroup(ctx, conn, cfg.Input.GroupID, cfg.Input.Topic, 2, 40*time.Second); err != nil {
		t.Fatal(err)
	}
	prodErr := make(chan error, 1)
	go func() { prodErr <- opsProduceAt(ctx, conn, cfg.Input.Topic, msgs, 1, 25*time.Millisecond) }()

	// Kill A once it is visibly mid-stream.
	if !waitPolled(ctx, 20*time.Second, func() bool { return scrapeMessagesIn(addrs[0]) >= 20 }) {
		t.Fatalf("replica A never consumed 20 messages (scraped %v)", scrapeMessagesIn(addrs[0]))
	}
	killedAfter := scrapeMessagesIn(addrs[0])
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	<-a.done
	var ee *exec.ExitError
	if !errors.As(a.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("replica A ended with %v, want killed by SIGKILL", a.err)
	}
	if err := <-prodErr; err != nil {
		t.Fatal(err)
	}
	out, err := ops.CollectExact(ctx, conn, cfg.Output.SanitizedTopic, "ops-kill-reader", want)
	if err != nil {
		t.Fatal(err)
	}
	takeover := time.Since(killedAt)
	if !b.running() {
		t.Fatalf("replica B exited: %v", b.err)
	}
	if err := terminate(b, 15*time.Second); err != nil {
		t.Errorf("replica B %v", err)
	}
	for name, p := range map[string]*dpsurvProcess{"A": a, "B": b} {
		if l := p.logs.String(); strings.Contains(l, "rawid") || strings.Contains(l, "ops-alpha") {
			t.Errorf("replica %s logged a raw id or label", name)
		}
	}
	t.Logf("A killed after %.0f input messages; all %d records sanitized %v after the kill; %d distinct sanitized messages, %d redelivered (identical)",
		killedAfter, len(want), takeover.Round(100*time.Millisecond), out.Distinct, out.Duplicates)
}
