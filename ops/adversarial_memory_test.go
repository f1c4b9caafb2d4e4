package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/schemas/schemastest"
)

// Issue 21, defect 2, through a real `dpsurv run` process and the embedded
// broker: the inputs, with the peak RSS (VmHWM) of the process
// over the bytes on the wire. On the code before: the site dictionary took
// the process from 34 to 2,394 MiB (out of memory under a 2.7 GB limit,
// on every restart), ten 900 KB-value messages 1.9 GB with 920 MB of dead
// letters, the 60-million-entry dictionary 632 MiB, sixteen 990 KB JSON
// messages 443 MiB.
func TestAdversarialInputsPeakMemory(t *testing.T) {
	t.Parallel()
	peakRSSTest(t)
	for _, run := range []struct {
		name, format string
		msgs         func(t *testing.T) [][]byte
		rows         func(msgs []message.Message) int
		maxRSS       int64
	}{
		// The generators are deterministic: each message is built once and
		// sent as often as the class needs (building the int8 dictionary's
		// 60 million entries twice took seconds under -race).
		{"arrow", "arrow", func(t *testing.T) [][]byte {
			var m [][]byte
			m = appendCopies(m, schemastest.SiteDict(t), 2)
			m = appendCopies(m, schemastest.DeadDict(t), 10)
			return appendCopies(m, schemastest.HugeCohortDict(t), 2)
		}, func([]message.Message) int { return 2*20_000 + 10*100 + 2*1000 }, 150 << 20},
		{"json", "json", func(t *testing.T) [][]byte {
			return appendCopies(nil, schemastest.JSONLines(990_000, 0), 16)
		}, func(msgs []message.Message) int {
			n := 0
			for _, m := range msgs {
				n += strings.Count(string(m.Value), "\n")
			}
			return n
		}, 150 << 20},
	} {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
			defer cancel()
			cl, conn := brokertest.Start(t, broker.Options{Partitions: 1})
			conn.ClientID = "advmem"
			if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{"adv.in": 1, "adv.out": 1, "adv.dlq": 1}, nil); err != nil {
				t.Fatal(err)
			}
			addr := opsFreeAddr(t)
			cfgFile := writeRunConfig(t, "adv", "advmem", cl.Addrs()[0], run.format, []string{"1", "2"}, addr)
			var msgs []message.Message
			wire := 0
			for _, v := range run.msgs(t) {
				msgs = append(msgs, message.Message{Value: v})
				wire += len(v)
			}
			if err := harness.Produce(ctx, conn, "adv.in", msgs, zap.NewNop()); err != nil {
				t.Fatal(err)
			}
			want := run.rows(msgs)
			p := startBuiltDpsurv(t, "run", "--config", cfgFile)
			m := waitRecordsIn(t, ctx, p, addr, float64(want), 200*time.Millisecond)
			peak, err := peakRSS(p.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d messages, %d bytes on the wire: peak RSS %.1f MiB; records in %v, out %v, dead-letter rows %v",
				len(msgs), wire, float64(peak)/(1<<20), m["dpsurv_records_in_total"], m["dpsurv_records_out_total"], m["dpsurv_dead_letter_rows_total"])
			if peak >= run.maxRSS {
				t.Errorf("peak RSS %.1f MiB, want < %d MiB", float64(peak)/(1<<20), run.maxRSS>>20)
			}
			if in := m["dpsurv_records_in_total"]; in != float64(want) || in != m["dpsurv_records_out_total"]+m["dpsurv_dead_letter_rows_total"] {
				t.Errorf("records do not balance: %v", m)
			}
		})
	}
}

// appendCopies appends n references to msg (messages are only read).
func appendCopies(m [][]byte, msg []byte, n int) [][]byte {
	for range n {
		m = append(m, msg)
	}
	return m
}
