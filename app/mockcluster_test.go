package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/synth"
)

// The sanitizer path end to end on a second, independent implementation
// of the Kafka protocol: librdkafka's mock cluster (3 brokers, partition
// leaders spread over them), fed by kcat (librdkafka's producer). The
// mock cluster has no CreateTopics or DescribeConfigs: while the output
// topic is missing the service says so and waits, alive and not ready;
// once it exists, every row is sanitized exactly as on the embedded
// broker, the undecodable message is dead-lettered, and the group's
// commits reach the end of every partition.
func TestSanitizerOnLibrdkafkaMockCluster(t *testing.T) {
	t.Parallel()
	testtier.Full(t, "librdkafka mock cluster end to end (kcat)")
	mock := brokertest.StartMockCluster(t, 3)
	defer func() {
		if t.Failed() {
			t.Logf("mock cluster log tail:\n%s", mock.Tail())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	mock.CreateTopics(t, "in", "dlq") // "out" is left to the operator, below

	cfg := txnConfig(mock.Addrs)
	cfg.Kafka.ClientID = "mock"
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	const n, per = 400, 10
	d, err := synth.Generate(synth.Options{N: n, Cohorts: cfg.Schema.Cohorts, TimeMax: cfg.Schema.TimeMax, Seed: 5, IDPrefix: "mock-"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := harness.Messages(cfg.Spec(), d, per, mem)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for i, m := range msgs {
		f := filepath.Join(dir, fmt.Sprintf("m%03d.arrow", i))
		if err := os.WriteFile(f, m.Value, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	garbage := filepath.Join(dir, "garbage.bin")
	if err := os.WriteFile(garbage, []byte("not an arrow stream"), 0o600); err != nil {
		t.Fatal(err)
	}
	files = append(files, garbage)

	logs := &apptest.Logs{}
	reg := prometheus.NewRegistry()
	svc := apptest.RunService(t, ctx, &app.Service{Config: cfg, Key: bytes.Repeat([]byte{7}, 32), Log: logs.Logger(), Mem: mem, Registry: reg})
	defer svc.StopOK()

	if !harness.WaitFor(ctx, 30*time.Second, func() bool { return strings.Contains(logs.String(), `"create_topics":["out"]`) }) {
		t.Fatalf("the service never said it needs topic out:\n%s", tail(logs.String(), 30))
	}
	svc.Waiting("topic out is missing")
	mock.CreateTopics(t, "out")
	mock.Produce(t, "in", files...)

	ok := harness.WaitFor(ctx, 60*time.Second, func() bool {
		return apptest.Metric(reg, "dpsurv_records_out_total", nil) == n &&
			apptest.Metric(reg, "dpsurv_records_dead_lettered_total", map[string]string{"reason": "undecodable"}) == 1
	})
	if !ok {
		t.Fatalf("records out %v (want %d), undecodable dead letters %v (want 1); log tail:\n%s",
			apptest.Metric(reg, "dpsurv_records_out_total", nil), n,
			apptest.Metric(reg, "dpsurv_records_dead_lettered_total", map[string]string{"reason": "undecodable"}), tail(logs.String(), 30))
	}
	var lag []kafkaconn.PartitionLag
	if !harness.WaitFor(ctx, 20*time.Second, func() bool {
		lag, err = kafkaconn.GroupLag(ctx, cfg.Kafka, cfg.Input.GroupID, "in")
		var sum, committed int64
		for _, p := range lag {
			sum += p.Lag()
			committed += p.Committed
		}
		return err == nil && len(lag) == 4 && sum == 0 && committed == int64(len(files))
	}) {
		t.Fatalf("input group lag %+v (%v): want the %d messages committed on 4 partitions", lag, err, len(files))
	}
	if !harness.WaitFor(ctx, 10*time.Second, svc.Ready) {
		t.Error("not ready while the stream flows")
	}

	// Read the sanitized topic back from the mock cluster: every row once
	// (a pseudonym per patient id).
	col, err := harness.NewCollector(cfg.Kafka, "out", "mock-check", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	ids := map[string]int{}
	for len(ids) < n {
		ms, err := col.Next(ctx)
		if err != nil {
			t.Fatalf("read the sanitized topic: %v (%d of %d rows)", err, len(ids), n)
		}
		for _, m := range ms {
			var s harness.Sanitized
			if err := s.DecodeSanitized(m.Value, mem); err != nil {
				t.Fatal(err)
			}
			for _, id := range s.ID {
				ids[id]++
				if strings.HasPrefix(id, "mock-") {
					t.Fatalf("a raw id reached the sanitized topic")
				}
			}
		}
	}
	if len(ids) != n {
		t.Errorf("%d distinct pseudonyms, want %d", len(ids), n)
	}
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}
