package ops_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/schemas/schemastest"
)

// duplicateIDMessage is a zstd-compressed Arrow message of n rows that all
// carry the same id: one good row and n-1 duplicate_id dead letters.
func duplicateIDMessage(t *testing.T, spec schemas.Spec, id string, n int) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	rec := pipelinetest.InputRecord(t, spec, n, func(int) string { return id }, func(i int) float64 { return float64(1 + i%1000) }, mem)
	defer rec.Release()
	return schemastest.Encode(t, rec, mem, ipc.WithZstd())
}

var metricRe = regexp.MustCompile(`(?m)^(dpsurv_[a-z_]+)(\{[^}]*\})? (\S+)$`)

// scrapeMetrics returns the dpsurv_ metrics of a process (name{labels}).
func scrapeMetrics(addr string) map[string]float64 {
	resp, err := scrapeClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, m := range metricRe.FindAllSubmatch(b, -1) {
		v, err := strconv.ParseFloat(string(m[3]), 64)
		if err == nil {
			out[string(m[1])+string(m[2])] = v
		}
	}
	return out
}

// peakRSS reads VmHWM (peak resident set) of a process, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// peakRSSTest marks a test of a child process's peak RSS: full tier only
// (multi-process), and it needs /proc to read the peak.
func peakRSSTest(t *testing.T) {
	t.Helper()
	testtier.Full(t, "multi-process memory test")
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read the peak RSS")
	}
}

// Defect 3: a message of many rows with one id produced one dead letter
// (with its row map and JSON) per row: 492 MB RSS for 240,000 rows. A
// real `dpsurv run` process now stays under 150 MiB peak RSS while it
// processes four sub-1 MB messages of 110,000 duplicate-id rows each, and
// the metrics alone balance: records in = records out + dead-letter rows.
func TestDuplicateRowsPeakMemoryBounded(t *testing.T) {
	t.Parallel()
	peakRSSTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, conn := brokertest.Start(t, broker.Options{Partitions: 1})
	conn.ClientID = "mem"
	if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{"mem.in": 1, "mem.out": 1, "mem.dlq": 1}, nil); err != nil {
		t.Fatal(err)
	}
	cohorts := []string{"rel-a", "rel-b"}
	addr := opsFreeAddr(t)
	cfgFile := writeRunConfig(t, "mem", "mem", cl.Addrs()[0], "arrow", cohorts, addr)
	spec := schemas.Spec{Cohorts: cohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	const rows, copies = 110_000, 4
	var msgs []message.Message
	for i := range copies {
		v := duplicateIDMessage(t, spec, fmt.Sprintf("same-patient-%d", i), rows)
		if len(v) >= 1_000_000 {
			t.Fatalf("message of %d bytes is not sub-1 MB", len(v))
		}
		if i == 0 {
			t.Logf("each message: %d rows, %d bytes (zstd)", rows, len(v))
		}
		msgs = append(msgs, message.Message{Value: v})
	}
	if err := harness.Produce(ctx, conn, "mem.in", msgs, zap.NewNop()); err != nil {
		t.Fatal(err)
	}

	// The service under measurement is built without the race detector
	// (whose shadow memory would be measured too), as it ships.
	p := startBuiltDpsurv(t, "run", "--config", cfgFile)
	const total = rows * copies
	m := waitRecordsIn(t, ctx, p, addr, total, 100*time.Millisecond)
	peak, err := peakRSS(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS %.1f MiB for %d messages of %d duplicate-id rows", float64(peak)/(1<<20), copies, rows)
	if peak >= 150<<20 {
		t.Errorf("peak RSS %.1f MiB, want < 150 MiB", float64(peak)/(1<<20))
	}
	in, out, dead := m["dpsurv_records_in_total"], m["dpsurv_records_out_total"], m["dpsurv_dead_letter_rows_total"]
	if in != total || out != copies || dead != total-copies || in != out+dead {
		t.Errorf("records in %v, out %v, dead-letter rows %v: want %d = %d + %d", in, out, dead, total, copies, total-copies)
	}
	if d := m[`dpsurv_records_dead_lettered_total{reason="duplicate_id"}`]; d != total-copies {
		t.Errorf("dead-lettered duplicate_id %v, want %d", d, total-copies)
	}
}

// writeRunConfig writes a PRF key file and the config of a `dpsurv run`
// process with the given client and group id, on broker, reading topic
// prefix.in in format with the cohorts (time in days up to 4000, event
// public, TE time and RRR cohort), writing prefix.out and the dead letters
// to prefix.dlq, serving HTTP on addr, logging warnings only. It returns the
// config file's path.
func writeRunConfig(t *testing.T, prefix, client, broker, format string, cohorts []string, addr string) string {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "prf.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("6d", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(cohorts))
	for i, c := range cohorts {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	cfgFile := filepath.Join(dir, "config.yaml")
	yaml := fmt.Sprintf(`kafka: {brokers: [%q], client_id: %s}
input: {topic: %s.in, group_id: %s, format: %s}
schema: {time_unit: days, time_max: 4000, cohorts: [%s], public: [event]}
sanitizers:
  key_file: %s
  time: {mechanism: te, epsilon: 0.5, window: 10}
  cohort: {mechanism: rrr, epsilon: 1}
output: {sanitized_topic: %s.out, dead_letter_topic: %s.dlq}
http: {listen: %q}
log: {level: warn}
`, broker, client, prefix, client, format, strings.Join(quoted, ", "), keyFile, prefix, prefix, addr)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgFile
}

// waitRecordsIn scrapes the metrics of p on addr every poll until
// dpsurv_records_in_total reaches want and returns them; it fails the test
// if p exits or ctx ends first.
func waitRecordsIn(t *testing.T, ctx context.Context, p *dpsurvProcess, addr string, want float64, poll time.Duration) map[string]float64 {
	t.Helper()
	for {
		m := scrapeMetrics(addr)
		if m["dpsurv_records_in_total"] >= want {
			return m
		}
		select {
		case <-p.done:
			t.Fatalf("dpsurv run exited: %v\n%s", p.err, p.logs.String())
		case <-ctx.Done():
			t.Fatalf("timed out: metrics %v", m)
		case <-time.After(poll):
		}
	}
}

// startBuiltDpsurv builds cmd/dpsurv as it ships (no -race, whatever the
// test binary is built with) and starts it with args.
func startBuiltDpsurv(t *testing.T, args ...string) *dpsurvProcess {
	t.Helper()
	bin, err := builtDpsurv()
	if err != nil {
		t.Fatal(err)
	}
	return startProcess(t, exec.Command(bin, args...), args)
}

// builtDpsurv builds cmd/dpsurv once for the package's tests (a link takes
// seconds) into ops.TestBinDir.
var builtDpsurv = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "dpsurv-ops-test-")
	if err != nil {
		return "", err
	}
	ops.TestBinDir = dir
	bin := filepath.Join(dir, "dpsurv")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/dpsurv").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build dpsurv: %w\n%s", err, out)
	}
	return bin, nil
})
