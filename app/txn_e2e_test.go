package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
)

// txnPayloads are the three input messages (Arrow IPC, tte.v1):
// 20 rows for a transaction that commits, 25 for one that aborts, 5 sent
// without a transaction.
type txnPayloads struct{ committed, aborted, plain []byte }

func txnConfig(addrs []string) app.Config {
	cfg := apptest.Config("txn", []string{"alpha", "beta"}, 1000)
	cfg.Kafka.Brokers = addrs
	return cfg
}

func makeTxnPayloads(t *testing.T, cfg app.Config, mem memory.Allocator) txnPayloads {
	t.Helper()
	msg := func(prefix string, n int) []byte {
		rec := pipelinetest.InputRecord(t, cfg.Spec(), n, func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }, func(i int) float64 { return float64(10 + i) }, mem)
		defer rec.Release()
		b, err := arrowipc.Encode(rec, mem)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return txnPayloads{committed: msg("committed", 20), aborted: msg("aborted", 25), plain: msg("plain", 5)}
}

// endOffset is a partition's high watermark (read_uncommitted: every
// record written, markers included).
func endOffset(ctx context.Context, t *testing.T, addrs []string, topic string) int64 {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: 10 * time.Second}
	res, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
	if err != nil {
		t.Fatalf("list offsets of %s: %v", topic, err)
	}
	ps := res.Topics[topic]
	if len(ps) != 1 || ps[0].Error != nil {
		t.Fatalf("list offsets of %s: %+v", topic, ps)
	}
	return ps[0].LastOffset
}

// runTxnScenario produces the three payloads with produce (an independent
// transactional producer), runs the service on them and checks the
// outcome the issue asks for: exactly 25 rows sanitized and counted (the
// committed 20 and the plain 5), no dead letter, the input group's commit
// at the end of the partition past both markers (lag 0).
func runTxnScenario(t *testing.T, cfg app.Config, p txnPayloads, mem memory.Allocator, produce func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addrs := cfg.Kafka.Brokers
	produce(ctx)
	// 20 rows + commit marker + 25 rows + abort marker + 5 rows.
	if end := endOffset(ctx, t, addrs, "in"); end != 5 {
		t.Fatalf("input partition end offset %d after producing, want 5 (3 messages, 2 transaction markers)", end)
	}

	reg := prometheus.NewRegistry()
	svc := apptest.RunService(t, ctx, &app.Service{Config: cfg, Key: bytes.Repeat([]byte{7}, 32), Log: zaptest.NewLogger(t), Mem: mem, Registry: reg})
	defer svc.StopOK()

	var lag []kafkaconn.PartitionLag
	ok := harness.WaitFor(ctx, 60*time.Second, func() bool {
		var err error
		lag, err = kafkaconn.GroupLag(ctx, cfg.Kafka, cfg.Input.GroupID, "in")
		return err == nil && len(lag) == 1 && lag[0].Committed == 5 && lag[0].Lag() == 0
	})
	if !ok {
		t.Fatalf("the input group never committed offset 5 (past the abort marker and the plain message): %+v; records in %v",
			lag, apptest.Metric(reg, "dpsurv_records_in_total", nil))
	}
	time.Sleep(300 * time.Millisecond) // anything late would show now

	if got := apptest.Metric(reg, "dpsurv_records_in_total", nil); got != 25 {
		t.Errorf("dpsurv_records_in_total = %v, want 25 (20 committed + 5 plain; the 25 aborted never counted)", got)
	}
	if got := apptest.Metric(reg, "dpsurv_records_out_total", nil); got != 25 {
		t.Errorf("dpsurv_records_out_total = %v, want 25", got)
	}
	if got := apptest.Metric(reg, "dpsurv_dead_letter_rows_total", nil); got != 0 {
		t.Errorf("dpsurv_dead_letter_rows_total = %v, want 0 (transaction markers are not messages)", got)
	}
	if a, m := apptest.Metric(reg, "dpsurv_input_transaction_messages_skipped_total", map[string]string{"kind": "aborted"}),
		apptest.Metric(reg, "dpsurv_input_transaction_messages_skipped_total", map[string]string{"kind": "marker"}); a != 1 || m != 2 {
		t.Errorf("dpsurv_input_transaction_messages_skipped_total aborted %v, marker %v; want 1 and 2", a, m)
	}
	if mfs, err := reg.Gather(); err != nil || !slices.ContainsFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == "dpsurv_input_unstable_messages" }) {
		t.Errorf("dpsurv_input_unstable_messages not exported (%v)", err)
	}
	if u := apptest.Metric(reg, "dpsurv_input_unstable_messages", nil); u != 0 {
		t.Errorf("dpsurv_input_unstable_messages = %v with no transaction open, want 0", u)
	}
	if end := endOffset(ctx, t, addrs, "dlq"); end != 0 {
		t.Errorf("%d dead letters written, want none", end)
	}
	// The sanitized topic holds exactly 25 rows.
	col, err := harness.NewCollector(cfg.Kafka, "out", "txn-check", zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	outEnd := endOffset(ctx, t, addrs, "out")
	rows, seen := 0, int64(0)
	for seen < outEnd {
		ms, err := col.Next(ctx)
		if err != nil {
			t.Fatalf("read the sanitized topic: %v (%d of %d messages)", err, seen, outEnd)
		}
		for _, m := range ms {
			var s harness.Sanitized
			if err := s.DecodeSanitized(m.Value, mem); err != nil {
				t.Fatal(err)
			}
			rows += len(s.ID)
			seen = max(seen, m.Offset+1)
		}
	}
	if rows != 25 {
		t.Errorf("the sanitized topic holds %d rows, want 25", rows)
	}
}

// The transactional case with an independent Go producer
// (franz-go's transactional kgo client, as NiFi/Connect/Flink write).
// On main: 50 rows sanitized and counted, 2 dead letters.
func TestTransactionalProducerServiceKgo(t *testing.T) {
	t.Parallel()
	c, _ := brokertest.Start(t, broker.Options{Topics: map[string]int{"in": 1, "out": 1, "dlq": 1}})
	cfg := txnConfig(c.Addrs())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	p := makeTxnPayloads(t, cfg, mem)
	runTxnScenario(t, cfg, p, mem, func(ctx context.Context) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("nifi-publishkafka"), kgo.DefaultProduceTopic("in"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for _, tx := range []struct {
			value  []byte
			commit bool
		}{{p.committed, true}, {p.aborted, false}} {
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: tx.value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(tx.commit)); err != nil {
				t.Fatal(err)
			}
		}
		plain, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("in"))
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		if err := plain.ProduceSync(ctx, &kgo.Record{Value: p.plain}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	})
}

// The same with kafkajs (npm), a client in another language: its
// transactional producer commits, aborts, then a plain producer sends.
// Full tier; skipped (loudly) only when node or npm is absent. The npm
// packages are pinned by tools/kafkajs/package-lock.json; .ci/run installs
// them, and this test runs `npm ci` itself when they are missing.
func TestTransactionalProducerServiceKafkajs(t *testing.T) {
	t.Parallel()
	testtier.Full(t, "kafkajs transactional producer end to end")
	dir := kafkajsDir(t)
	c, _ := brokertest.Start(t, broker.Options{Topics: map[string]int{"in": 1, "out": 1, "dlq": 1}})
	cfg := txnConfig(c.Addrs())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	p := makeTxnPayloads(t, cfg, mem)
	files := t.TempDir()
	for name, b := range map[string][]byte{"committed": p.committed, "aborted": p.aborted, "plain": p.plain} {
		if err := os.WriteFile(filepath.Join(files, name+".arrow"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runTxnScenario(t, cfg, p, mem, func(ctx context.Context) {
		cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "txn-produce.js"), strings.Join(c.Addrs(), ","), "in",
			filepath.Join(files, "committed.arrow"), filepath.Join(files, "aborted.arrow"), filepath.Join(files, "plain.arrow"))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		t.Logf("kafkajs producer:\n%s", out)
		if err != nil {
			t.Fatalf("kafkajs producer: %v", err)
		}
	})
}

// kafkajsDir returns tools/kafkajs with its npm packages installed,
// skipping the test (loudly) when node or npm is missing.
func kafkajsDir(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("SKIPPED: %s is not installed; this test needs node and npm (Debian: apt-get install nodejs npm)", bin)
		}
	}
	dir, err := filepath.Abs(filepath.Join("..", "tools", "kafkajs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return dir
}
