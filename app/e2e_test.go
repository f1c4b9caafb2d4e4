package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/message"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// crashingSource dies at its n-th batch after the batch's outputs were
// written and before its offsets are committed — the worst moment for a
// consumer to die: that batch's commit never happens and every later read
// fails.
type crashingSource struct {
	message.Source
	n       int
	count   atomic.Int64
	crashed atomic.Bool
	mu      sync.Mutex
	cancel  context.CancelFunc // of the read in progress
}

// Unwrap keeps the stall monitor's view of the group reader.
func (c *crashingSource) Unwrap() message.Source { return c.Source }

var errCrash = fmt.Errorf("simulated crash before commit: %w", pipeline.ErrStop)

func (c *crashingSource) crash() {
	c.crashed.Store(true)
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
}

func (c *crashingSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	if c.crashed.Load() {
		return message.Batch{}, errCrash
	}
	b, err := c.Source.ReadBatch(rctx)
	if c.crashed.Load() {
		return message.Batch{}, errCrash
	}
	if err != nil {
		return b, err
	}
	if int(c.count.Add(1)) == c.n {
		b.Ack = func(context.Context) error { c.crash(); return errCrash }
	}
	return b, nil
}

type outRow struct {
	value  string // the whole sanitized message bytes it came in
	time   float64
	cohort int32
	event  bool
}

func TestEndToEndCrashRestartNoLossIdenticalDuplicates(t *testing.T) {
	t.Parallel()
	cohorts := []string{"label-alpha-secret", "label-beta-secret", "label-gamma-secret"}
	cfg := apptest.Config("e2e", cohorts, 4000)
	cfg.Input.MaxBatch, cfg.Input.Partitions = 4, 3
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Log.Level = "debug"
	f := apptest.New(t, cfg, apptest.Partitions(3), apptest.Timeout(90*time.Second), apptest.Key(bytes.Repeat([]byte{9}, 32)),
		apptest.Topics(map[string]int{"out": 3, "dlq": 1}), apptest.NoValidate())
	cfg, logs, mem := f.Config, f.Logs, f.Mem

	const n = 3000
	spec := cfg.Spec()
	d, err := synth.Generate(synth.Options{N: n, Cohorts: cohorts, TimeMax: 4000, Seed: 3, IDPrefix: "secret-patient-"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Time {
		d.Time[i] += 0.3125 // distinctive raw values to look for in the logs
	}
	msgs, err := harness.Messages(spec, d, 100, mem)
	if err != nil {
		t.Fatal(err)
	}
	// Bad input: undecodable bytes, wrong schema, and bad rows.
	badRec, err := schemas.BuildInput(spec,
		[]string{"secret-bad-1", "secret-bad-2", "secret-bad-3", "secret-bad-3", "secret-good-9"},
		[]float64{-7.5, 12.25, 13.5, 14.5, 15.5}, []bool{true, true, true, false, true},
		[]string{cohorts[0], "label-unknown-secret", cohorts[1], cohorts[1], cohorts[2]}, nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	badIPC, err := arrowipc.Encode(badRec, mem)
	badRec.Release()
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs[:10], append([]message.Message{
		{Key: []byte("garbage"), Value: []byte("secret-garbage-bytes")},
		{Key: []byte("bad"), Value: badIPC},
	}, msgs[10:]...)...)
	wantDead := map[string]int{"undecodable": 1, "invalid_time": 1, "unknown_cohort": 1, "duplicate_id": 1}
	wantGood := n + 2 // secret-bad-3's first row and secret-good-9

	f.Produce("in", msgs)

	// First consumer dies between writing its 3rd batch and committing it.
	svc1 := f.Run(func(svc *app.Service) {
		svc.Registry = nil
		svc.Transport = apptest.Kafka(cfg, func(role app.Role, s message.Source) message.Source {
			if role != app.RoleInput {
				return s
			}
			return &crashingSource{Source: s, n: 3}
		}, nil)
	})
	if err := svc1.Wait(); !errors.Is(err, errCrash) {
		t.Fatalf("first run: want simulated crash, got %v", err)
	}
	if svc1.Acked() == 0 {
		t.Fatal("first run committed nothing before the crash")
	}
	// Restart in the same group: it must resume from the last commit.
	svc2 := f.Run(func(svc *app.Service) { svc.Registry = nil })

	// Collect outputs.
	rows := map[string][]outRow{} // pseudonym -> rows seen
	bySource := map[string]string{}
	dupMessages, distinctMessages := 0, 0
	col, err := harness.NewCollector(cfg.Kafka, "out", "e2e-reader", f.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	for len(rows) < wantGood {
		ms, err := col.Next(f.Ctx)
		if err != nil {
			os.WriteFile("/tmp/e2e.log", []byte(logs.String()), 0o644)
			t.Fatalf("collect: %v (have %d of %d)", err, len(rows), wantGood)
		}
		for _, m := range ms {
			src := header(m, sanitize.HeaderSource)
			if prev, ok := bySource[src]; ok {
				dupMessages++
				if prev != string(m.Value) {
					t.Fatalf("redelivered message from %s is not byte-identical", src)
				}
				continue
			}
			bySource[src] = string(m.Value)
			distinctMessages++
			var s harness.Sanitized
			if err := s.DecodeSanitized(m.Value, mem); err != nil {
				t.Fatal(err)
			}
			for i, id := range s.ID {
				rows[id] = append(rows[id], outRow{value: src, time: s.Time[i], cohort: s.Cohort[i], event: s.Event[i]})
			}
		}
	}
	// Dead letters.
	dcol, err := harness.NewCollector(cfg.Kafka, "dlq", "e2e-dlq-reader", f.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer dcol.Close()
	gotDead := map[string]int{}
	seenDead := map[string]bool{}
	for total := 0; total < 4; {
		ms, err := dcol.Next(f.Ctx)
		if err != nil {
			t.Fatalf("collect dead letters: %v (have %v)", err, gotDead)
		}
		for _, m := range ms {
			var dl struct {
				Reason string         `json:"reason"`
				Row    map[string]any `json:"row"`
				Source map[string]any `json:"source"`
			}
			if err := json.Unmarshal(m.Value, &dl); err != nil {
				t.Fatalf("dead letter is not JSON: %v", err)
			}
			k := dl.Reason + fmt.Sprint(dl.Row["id"])
			if seenDead[k] {
				continue // a redelivered duplicate
			}
			seenDead[k] = true
			if dl.Source["topic"] != "in" {
				t.Fatalf("dead letter without source position: %s", m.Value)
			}
			gotDead[dl.Reason]++
			total++
		}
	}
	// Health and metrics while running.
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + svc2.HealthAddr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz %d while consuming", code)
	}
	_, metrics := get("/metrics")
	for _, m := range []string{"dpsurv_records_in_total", "dpsurv_records_out_total",
		"dpsurv_consumer_lag", "dpsurv_batch_latency_seconds_bucket"} {
		if !strings.Contains(metrics, m) {
			t.Fatalf("/metrics lacks %s", m)
		}
	}
	// The loss of the published (clamped) time at eps 0.5, W 10:
	// max(L, eps W) = 5 (from the sampled table: within 1e-12).
	lossLine := `dpsurv_record_privacy_loss{field="time",kind="time-indistinguishability"} `
	i := strings.Index(metrics, lossLine)
	if i < 0 {
		t.Fatalf("/metrics lacks %s", lossLine)
	}
	v, _, _ := strings.Cut(metrics[i+len(lossLine):], "\n")
	if loss, err := strconv.ParseFloat(v, 64); err != nil || math.Abs(loss-5) > 1e-12 {
		t.Fatalf("time privacy loss %q, want 5", v)
	}
	if err := svc2.Stop(); err != nil {
		t.Fatalf("second run: %v", err)
	}
	for k, v := range wantDead {
		if gotDead[k] != v {
			t.Errorf("dead letters %v, want %v", gotDead, wantDead)
			break
		}
	}
	if len(rows) != wantGood {
		t.Fatalf("%d distinct sanitized records, want %d", len(rows), wantGood)
	}
	if dupMessages == 0 {
		t.Log("no redelivered duplicates observed (the crash hit before any write?)")
	}
	t.Logf("%d distinct sanitized messages, %d redelivered duplicates (all byte-identical)", distinctMessages, dupMessages)

	// Replay stability: sanitizing the same input again with the same key
	// gives the same rows (compare against the file-mode chain).
	// Logs of the whole run: no raw id, time or label.
	out := logs.String()
	if len(out) < 1000 {
		t.Fatalf("suspiciously few logs (%d bytes)", len(out))
	}
	for _, needle := range []string{"secret", "label-", ".3125", "12.25", "-7.5", "garbage-bytes"} {
		if strings.Contains(out, needle) {
			i := strings.Index(out, needle)
			t.Fatalf("logs contain raw value %q: ...%s...", needle, out[max(0, i-200):min(len(out), i+100)])
		}
	}
	for i := 0; i < n; i += 97 {
		if strings.Contains(out, strconv.FormatFloat(d.Time[i], 'g', -1, 64)) {
			t.Fatalf("logs contain raw time %v", d.Time[i])
		}
	}
	mem.AssertSize(t, 0)
}

func header(m message.Message, k string) string {
	for _, h := range m.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}
