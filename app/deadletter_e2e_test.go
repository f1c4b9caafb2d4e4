package app_test

// End-to-end tests of issue 10 through the real service and the embedded
// broker: no input stops, blocks or bloats the stream.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/schemas"
)

// reliabConfig is a one-partition stream (input order is output order).
// With a nil cluster it names no broker (apptest.New starts one).
func reliabConfig(t *testing.T, cl *broker.Cluster, group string) app.Config {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.Kafka = kafkaconn.Config{ClientID: group}
	if cl != nil {
		cfg.Kafka.Brokers = cl.Addrs()
	}
	cfg.Input = app.DefaultConfig().Input
	cfg.Input.Topic, cfg.Input.GroupID, cfg.Input.MaxBatch, cfg.Input.Partitions = group+".in", group, 4, 1
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: pipelinetest.Cohorts, Public: []string{"event"}}
	cfg.Sanitizers.KeyFile = "(test)"
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	cfg.Sanitizers.Cohort.Mechanism = "rrr"
	cfg.Sanitizers.Cohort.Epsilon = 1
	cfg.Output = app.DefaultConfig().Output
	cfg.Output.SanitizedTopic, cfg.Output.DeadLetterTopic = group+".out", group+".dlq"
	cfg.HTTP.Listen = ""
	return cfg
}

var reliabKey = pipelinetest.Key

// reliabFixture is a fixture on reliabConfig(group), adjusted by edit: a
// broker of input.partitions partitions, the input and sanitized topics
// of as many, a dead-letter topic of one.
func reliabFixture(t *testing.T, group string, timeout time.Duration, edit func(*app.Config)) *apptest.Fixture {
	t.Helper()
	cfg := reliabConfig(t, nil, group)
	if edit != nil {
		edit(&cfg)
	}
	return apptest.New(t, cfg, apptest.Timeout(timeout), apptest.Key(reliabKey), apptest.NoValidate(), apptest.Partitions(cfg.Input.Partitions),
		apptest.Topics(map[string]int{cfg.Output.SanitizedTopic: cfg.Input.Partitions, cfg.Output.DeadLetterTopic: 1}))
}

// produceKeyed produces n messages to f's input topic, message i keyed
// key-<i> with 5 rows whose ids are <prefix><i>-<row>, and returns them.
func produceKeyed(f *apptest.Fixture, prefix string, n int) []message.Message {
	f.T.Helper()
	var msgs []message.Message
	for i := range n {
		msgs = append(msgs, message.Message{Key: []byte(fmt.Sprintf("key-%d", i)), Value: pipelinetest.RowsMessage(f.T, pipelinetest.SeqIDs(fmt.Sprintf("%s%d-", prefix, i), 5), false)})
	}
	f.Produce(f.Config.Input.Topic, msgs)
	return msgs
}

// runQuiet runs a service of f as the reliability tests do: no log, an
// unchecked allocator, the default registry.
func runQuiet(f *apptest.Fixture, edit ...func(*app.Service)) *apptest.Service {
	quiet := func(s *app.Service) { s.Log, s.Mem, s.Registry = zap.NewNop(), memory.NewGoAllocator(), nil }
	return f.Run(append([]func(*app.Service){quiet}, edit...)...)
}

// topicReader collects a topic in the background.
type topicReader struct {
	mu   sync.Mutex
	msgs []message.Message
}

func readTopic(t *testing.T, ctx context.Context, conn kafkaconn.Config, topic string) *topicReader {
	t.Helper()
	col, err := harness.NewCollector(conn, topic, topic+"-reader", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	r := &topicReader{}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ms, err := col.Next(rctx)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.msgs = append(r.msgs, ms...)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = col.Close() })
	return r
}

func (r *topicReader) snapshot() []message.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]message.Message(nil), r.msgs...)
}

// sanitizedRows counts the rows of sanitized messages.
func sanitizedRows(t *testing.T, msgs []message.Message) int {
	t.Helper()
	n := 0
	for _, m := range msgs {
		recs, err := arrowipc.DecodeRecords(m.Value, memory.NewGoAllocator())
		if err != nil {
			t.Fatalf("sanitized message does not decode: %v", err)
		}
		for _, r := range recs {
			n += int(r.NumRows())
			r.Release()
		}
	}
	return n
}

func deadLetters(t *testing.T, msgs []message.Message) []pipelinetest.DeadLetterJSON {
	t.Helper()
	var out []pipelinetest.DeadLetterJSON
	for _, m := range msgs {
		var d pipelinetest.DeadLetterJSON
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatalf("dead letter is not JSON: %v", err)
		}
		out = append(out, d)
	}
	return out
}

// Defect 2: messages that pass validation but that a later stage could
// not handle used to stop `dpsurv run` (exit 1, again after every
// restart). Each is now dead-lettered and the partition keeps flowing.
func TestCrashLoopMessagesAreDeadLettered(t *testing.T) {
	t.Parallel()
	spec := schemas.Spec{Cohorts: pipelinetest.Cohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	for _, tc := range []struct {
		name   string
		public []string
		bad    []byte
		reason string
		good   int // good rows in bad
		rows   int // rows in bad (all counted in dpsurv_records_in_total)
	}{
		// (a) the pseudonym's input encoding holds 16-bit lengths.
		{"id of 70,000 bytes", []string{"event"}, pipelinetest.RowsMessage(t, []string{strings.Repeat("x", 70_000), "ok-long-0"}, false), schemas.ReasonInvalidID, 1, 2},
		// (b) the fuzzing crash: negative null count on event.
		{"negative null count", []string{"event"}, pipelinetest.NegativeNullCountMessage(t, spec, "nc-", 13), schemas.ReasonUndecodable, 0, 13},
		// (c) a public optional column the message lacks, which the
		// config marks required (schema.required; without it the column
		// is null, TestPublicOptionalColumnMissingIsNull).
		{"public site missing", []string{"event", "site"}, pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("nosite-", 5), false), schemas.ReasonMissingField, 0, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := reliabFixture(t, "crash", 60*time.Second, func(cfg *app.Config) {
				cfg.Schema.Public = tc.public
				if slices.Contains(tc.public, "site") {
					cfg.Schema.Required = []string{"site"}
				}
			})
			ctx, cfg := f.Ctx, f.Config
			site := slices.Contains(tc.public, "site")
			msgs := []message.Message{{Key: []byte("bad"), Value: tc.bad}, {Key: []byte("good"), Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("good-", 20), site)}}
			f.Produce(cfg.Input.Topic, msgs)
			svc := runQuiet(f)
			out := readTopic(t, ctx, cfg.Kafka, cfg.Output.SanitizedTopic)
			dlq := readTopic(t, ctx, cfg.Kafka, cfg.Output.DeadLetterTopic)
			want := 20 + tc.good
			svc.WaitFor(45*time.Second, fmt.Sprintf("%d sanitized rows and a dead letter", want), func() bool {
				return sanitizedRows(t, out.snapshot()) >= want && len(dlq.snapshot()) >= 1 && svc.Acked() == 2
			})
			if n := sanitizedRows(t, out.snapshot()); n != want {
				t.Errorf("%d sanitized rows, want %d", n, want)
			}
			d := deadLetters(t, dlq.snapshot())
			if len(d) != 1 || d[0].Reason != tc.reason || fmt.Sprint(d[0].Source["offset"]) != "0" {
				t.Errorf("dead letters %+v, want one %s for offset 0", d, tc.reason)
			}
			if !svc.Ready() {
				t.Error("service not ready after the message")
			}
			// Issue 21: a whole-message dead letter counts its rows.
			if in := pipelinetest.Value(svc.RecordMetrics().RecordsIn); in != float64(20+tc.rows) {
				t.Errorf("records in %v, want %d (20 good + %d in the bad message)", in, 20+tc.rows, tc.rows)
			}
		})
	}
}

// Defect 1: a valid message near the broker's limit whose sanitized form
// exceeds it, an undecodable message whose dead letter would (base64), and
// a huge key used to block the partition forever (retried, never ready).
func TestLargeMessagesAreSplitAndDeadLettersBounded(t *testing.T) {
	t.Parallel()
	f := reliabFixture(t, "large", 90*time.Second, nil)
	ctx, cfg := f.Ctx, f.Config
	const big = 25_000
	bigMsg := pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("pt-", big), false)
	garbage := bytes.Repeat([]byte("not arrow "), 95_000) // 950,000 bytes: its base64 dead letter is 1.27 MB
	msgs := []message.Message{
		{Key: []byte("big"), Value: bigMsg},
		{Key: []byte("garbage"), Value: garbage},
		{Key: bytes.Repeat([]byte("k"), 900_000), Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("bigkey-", 10), false)},
		{Key: []byte("after"), Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("after-", 10), false)},
	}
	f.Produce(cfg.Input.Topic, msgs)
	t.Logf("input message of %d rows: %d bytes", big, len(bigMsg))
	svc := runQuiet(f)
	out := readTopic(t, ctx, cfg.Kafka, cfg.Output.SanitizedTopic)
	dlq := readTopic(t, ctx, cfg.Kafka, cfg.Output.DeadLetterTopic)
	want := big + 20
	svc.WaitFor(75*time.Second, fmt.Sprintf("%d sanitized rows and 1 dead letter", want), func() bool {
		return sanitizedRows(t, out.snapshot()) >= want && len(dlq.snapshot()) >= 1
	})
	outMsgs := out.snapshot()
	if n := sanitizedRows(t, outMsgs); n != want {
		t.Errorf("%d sanitized rows, want %d", n, want)
	}
	parts := 0
	for _, m := range outMsgs {
		size := len(m.Key) + len(m.Value)
		if size > sanitize.DefaultMaxMessageBytes {
			t.Errorf("sanitized message of %d bytes exceeds the %d limit", size, sanitize.DefaultMaxMessageBytes)
		}
		if header(m, sanitize.HeaderSource) == cfg.Input.Topic+"/0/0" {
			parts++
		}
	}
	if parts < 2 {
		t.Errorf("the %d-row message became %d sanitized message(s); want it split", big, parts)
	}
	d := deadLetters(t, dlq.snapshot())
	if len(d) != 1 || d[0].Reason != schemas.ReasonUndecodable || !strings.Contains(d[0].Detail, "sha256") || fmt.Sprint(d[0].Source["offset"]) != "1" {
		t.Errorf("want one truncated undecodable dead letter for offset 1 naming the sha256, got %+v", d)
	}
	if !svc.Ready() {
		t.Error("service not ready")
	}
	t.Logf("the %d-row message became %d sanitized messages", big, parts)
}

// failingSink fails every write while failing is set, counting attempts.
type failingSink struct {
	message.Sink
	failing  atomic.Bool
	attempts atomic.Int64
}

func (f *failingSink) Write(ctx context.Context, msgs []message.Message) error {
	if f.failing.Load() {
		f.attempts.Add(1)
		return errors.New("injected dead-letter sink failure")
	}
	return f.Sink.Write(ctx, msgs)
}

// Defect 4: while only the dead-letter write failed, every retry wrote the
// sanitized batch again, and dead letters were counted before they were
// written.
func TestRetryRewritesOnlyTheFailedSink(t *testing.T) {
	t.Parallel()
	f := reliabFixture(t, "retry", 60*time.Second, nil)
	ctx, cfg := f.Ctx, f.Config
	// Each message: 10 good rows and one duplicate (a dead letter).
	var msgs []message.Message
	for i := range 3 {
		ids := pipelinetest.SeqIDs(fmt.Sprintf("m%d-", i), 10)
		msgs = append(msgs, message.Message{Value: pipelinetest.RowsMessage(t, append(ids, ids[0]), false)})
	}
	f.Produce(cfg.Input.Topic, msgs)
	fs := &failingSink{}
	fs.failing.Store(true)
	svc := runQuiet(f, func(svc *app.Service) {
		svc.Transport = apptest.Kafka(cfg, nil, func(role app.Role, s message.Sink) message.Sink {
			if role != app.RoleDeadLetter {
				return s
			}
			fs.Sink = s
			return fs
		})
	})
	out := readTopic(t, ctx, cfg.Kafka, cfg.Output.SanitizedTopic)
	dlq := readTopic(t, ctx, cfg.Kafka, cfg.Output.DeadLetterTopic)
	svc.WaitFor(30*time.Second, "4 failed dead-letter writes", func() bool { return fs.attempts.Load() >= 4 })
	m := svc.RecordMetrics()
	if v := pipelinetest.Value(m.DeadLettered.WithLabelValues(schemas.ReasonDuplicateID)); v != 0 {
		t.Errorf("dpsurv_records_dead_lettered_total = %v while no dead letter was written", v)
	}
	fs.failing.Store(false)
	svc.WaitFor(30*time.Second, "30 sanitized rows and the dead letters", func() bool {
		return sanitizedRows(t, out.snapshot()) >= 30 && len(dlq.snapshot()) >= 3 && svc.Acked() == 3
	})
	// Every copy is written before its message is acknowledged: with all
	// three acknowledged, the topic's end offsets are final, and the
	// reader has every copy once it has read up to them.
	ends, err := kafkaconn.GroupLag(ctx, cfg.Kafka, cfg.Output.SanitizedTopic+"-reader", cfg.Output.SanitizedTopic) // the reader's group
	if err != nil {
		t.Fatal(err)
	}
	svc.WaitFor(30*time.Second, "the reader at the sanitized topic's end offsets", func() bool {
		read := map[int]int64{}
		for _, msg := range out.snapshot() {
			read[msg.Partition] = max(read[msg.Partition], msg.Offset+1)
		}
		for _, p := range ends {
			if read[p.Partition] < p.End {
				return false
			}
		}
		return true
	})
	seen := map[string]int{}
	for _, msg := range out.snapshot() {
		seen[header(msg, sanitize.HeaderSource)]++
	}
	for src, n := range seen {
		if n != 1 {
			t.Errorf("sanitized message from %s written %d times during %d failed dead-letter writes", src, n, fs.attempts.Load())
		}
	}
	if v := pipelinetest.Value(m.DeadLettered.WithLabelValues(schemas.ReasonDuplicateID)); v != 3 {
		t.Errorf("dpsurv_records_dead_lettered_total{duplicate_id} = %v, want 3", v)
	}
	in, outN, dead := pipelinetest.Value(m.RecordsIn), pipelinetest.Value(m.RecordsOut), pipelinetest.Value(m.DeadLetterRows)
	if in != 33 || outN != 30 || dead != 3 {
		t.Errorf("records in %v, out %v, dead-lettered %v; want 33 = 30 + 3", in, outN, dead)
	}
}

// Defect 1: the bound is learned from the output topics' max.message.bytes
// when that is lower than output.max_message_bytes.
func TestOutputBoundLearnedFromTopic(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, reliabConfig(t, nil, "learn"), apptest.Timeout(60*time.Second), apptest.Key(reliabKey), apptest.NoValidate())
	ctx, cfg := f.Ctx, f.Config
	const topicMax = 200_000
	tr, err := cfg.Kafka.Transport()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	kc := &kafka.Client{Addr: kafka.TCP(cfg.Kafka.Brokers...), Transport: tr}
	var topics []kafka.TopicConfig
	for _, tp := range []string{cfg.Output.SanitizedTopic, cfg.Output.DeadLetterTopic} {
		topics = append(topics, kafka.TopicConfig{Topic: tp, NumPartitions: 1, ReplicationFactor: 1,
			ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: fmt.Sprint(topicMax)}}})
	}
	if _, err := kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: topics}); err != nil {
		t.Fatal(err)
	}
	lim, err := kafkaconn.TopicMaxMessageBytes(ctx, cfg.Kafka, cfg.Output.SanitizedTopic)
	if err != nil || lim[cfg.Output.SanitizedTopic] != topicMax {
		t.Fatalf("topic max.message.bytes %v, %v", lim, err)
	}
	const n = 10_000
	f.Produce(cfg.Input.Topic, []message.Message{{Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs("pt-", n), false)}})
	svc := runQuiet(f)
	out := readTopic(t, ctx, cfg.Kafka, cfg.Output.SanitizedTopic)
	svc.WaitFor(45*time.Second, fmt.Sprintf("%d sanitized rows", n), func() bool { return sanitizedRows(t, out.snapshot()) >= n })
	msgs := out.snapshot()
	for _, m := range msgs {
		if size := len(m.Key) + len(m.Value); size > topicMax-1024 {
			t.Errorf("sanitized message of %d bytes above the topic's bound", size)
		}
	}
	if len(msgs) < 2 {
		t.Errorf("%d sanitized messages; want the ~500 KB output split under the topic's %d bytes", len(msgs), topicMax)
	}
	t.Logf("%d rows in %d sanitized messages under max.message.bytes %d", n, len(msgs), topicMax)
}
