package ops_test

// Helpers shared by the operations tests (package ops_test): a config, an
// input cohort with the rows a single in-process chain makes of it, and a
// collector that checks the sanitized topic against those rows exactly.

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/synth"
)

var opsCohorts = []string{"ops-alpha", "ops-beta", "ops-gamma"}

// opsKey is the PRF key every replica of a test shares.
var opsKey = bytes.Repeat([]byte{0x4f}, 32)

// opsConfig is a service config for the ops tests: 4 input partitions,
// small processing batches (so that a run has many commits), TE + RRR.
func opsConfig(conn kafkaconn.Config, group string) app.Config {
	cfg := app.DefaultConfig()
	cfg.Kafka = conn
	cfg.Input = app.InputConfig{Topic: "ops.in", GroupID: group, Format: "arrow", MaxBatch: 4, Partitions: 4}
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: opsCohorts, Public: []string{"event"}}
	cfg.Sanitizers.KeyFile = "(test)"
	cfg.Sanitizers.Time = sanitizers.TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10}
	cfg.Sanitizers.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}
	cfg.Output = app.OutputConfig{SanitizedTopic: "ops.sanitized", DeadLetterTopic: "ops.deadletter"}
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Log.Level = "info"
	return cfg
}

// opsInput is a cohort split into Arrow messages, and the sanitized row
// each record must become (by pseudonym), computed by one chain in this
// process with the same key (ops.Reference).
type opsInput struct {
	msgs []message.Message
	want map[string]ops.Row
}

func opsNewInput(t *testing.T, cfg app.Config, key []byte, n, batch int, seed uint64, prefix string) opsInput {
	t.Helper()
	_, msgs := opsCohortMessages(t, cfg, synth.Options{N: n, Cohorts: opsCohorts, TimeMax: 4000, Seed: seed, IDPrefix: prefix}, batch, prefix+"-")
	want, err := ops.Reference(cfg, key, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != n {
		t.Fatalf("reference has %d records, want %d", len(want), n)
	}
	return opsInput{msgs: msgs, want: want}
}

// opsCollectExact reads the sanitized topic until every wanted record has
// arrived, and fails the test if a record is missing, unexpected, differs
// from the reference, or if a redelivered message (same source position)
// is not byte-identical to its first copy.
func opsCollectExact(t *testing.T, ctx context.Context, conn kafkaconn.Config, topic, group string, want map[string]ops.Row) ops.Outcome {
	t.Helper()
	out, err := ops.CollectExact(ctx, conn, topic, group, want)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// opsCohortMessages is a synthetic cohort and its Arrow messages of batch
// records, keyed keyPrefix0, keyPrefix1, ... (spread over partitions).
func opsCohortMessages(t *testing.T, cfg app.Config, o synth.Options, batch int, keyPrefix string) (synth.Data, []message.Message) {
	t.Helper()
	d, err := synth.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := harness.Messages(cfg.Spec(), d, batch, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		msgs[i].Key = []byte(keyPrefix + strconv.Itoa(i))
	}
	return d, msgs
}

// opsEnsureTopics makes cfg's input and sanitized topics of four
// partitions and its dead-letter topic of one.
func opsEnsureTopics(t *testing.T, ctx context.Context, conn kafkaconn.Config, cfg app.Config) {
	t.Helper()
	if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{cfg.Input.Topic: 4, cfg.Output.SanitizedTopic: 4, cfg.Output.DeadLetterTopic: 1}, nil); err != nil {
		t.Fatal(err)
	}
}

// opsFreeAddr returns a loopback address with a port that is free now
// and below the ephemeral range (brokertest.FreeAddr). Tests set
// http.listen to it instead of reading Service.HealthAddr while Run may
// still be starting (HealthAddr is not synchronised with Run).
func opsFreeAddr(t *testing.T) string { return brokertest.FreeAddr(t) }

// opsRunService starts svc in a goroutine; the returned function cancels it
// and returns Run's error (stopping twice returns the same error). The test
// cleanup stops it too.
func opsRunService(t *testing.T, ctx context.Context, svc *app.Service) (stop func() error, done <-chan struct{}) {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx)
	ch := make(chan struct{})
	var runErr error
	go func() {
		defer close(ch)
		runErr = svc.Run(sctx)
	}()
	stop = func() error {
		cancel()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Errorf("service did not stop within 30 s of cancellation")
		}
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ch
}

// opsProduceAt writes msgs in chunks of chunk messages, one chunk every
// every, so that consumers see a stream rather than a backlog.
func opsProduceAt(ctx context.Context, conn kafkaconn.Config, topic string, msgs []message.Message, chunk int, every time.Duration) error {
	w, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: topic}, zap.NewNop())
	if err != nil {
		return err
	}
	defer w.Close()
	for lo := 0; lo < len(msgs); lo += chunk {
		if err := w.Write(ctx, msgs[lo:min(lo+chunk, len(msgs))]); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
	return nil
}

// opsSupervisor runs a service the way a process supervisor (Kubernetes,
// systemd) runs `dpsurv run`: when Run returns an error it records the
// error and starts a fresh service after a short backoff.
type opsSupervisor struct {
	mu      sync.Mutex
	exits   []error
	tracked []*ops.TrackedSource
	cancel  context.CancelFunc
	done    chan struct{}
}

// opsSupervise starts mk() under supervision until the returned
// supervisor is stopped (also at test cleanup). Every service's source is
// wrapped in a TrackedSource.
func opsSupervise(t *testing.T, ctx context.Context, mk func() *app.Service) *opsSupervisor {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx)
	sv := &opsSupervisor{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(sv.done)
		for sctx.Err() == nil {
			svc := mk()
			tr := &ops.TrackedSource{}
			inner := svc.Transport
			if inner == nil {
				inner = app.KafkaTransport{Config: svc.Config, Log: svc.Log}
			}
			svc.Transport = &apptest.Transport{Transport: inner, WrapSource: func(role app.Role, s message.Source) message.Source {
				if role != app.RoleInput {
					return s
				}
				tr.Source = s
				return tr
			}}
			sv.mu.Lock()
			sv.tracked = append(sv.tracked, tr)
			sv.mu.Unlock()
			err := svc.Run(sctx)
			if err == nil {
				return
			}
			sv.mu.Lock()
			sv.exits = append(sv.exits, err)
			sv.mu.Unlock()
			select {
			case <-sctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { sv.stop() })
	return sv
}

// acked is the number of messages acknowledged by all instances so far.
func (sv *opsSupervisor) acked() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	n := 0
	for _, tr := range sv.tracked {
		n += tr.Stats().AckedMessages
	}
	return n
}

// exitErrors are the errors the instances exited with.
func (sv *opsSupervisor) exitErrors() []error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return append([]error(nil), sv.exits...)
}

// stop cancels the service and waits for it.
func (sv *opsSupervisor) stop() {
	sv.cancel()
	<-sv.done
}

// slowPoll is how often the fault tests' waits check a condition that
// scrapes a child process's /metrics or reads a topic from the broker:
// every 10 ms (harness.WaitFor) such a poll cost the -race-built children
// and the in-process broker seconds of CPU a test.
const slowPoll = 100 * time.Millisecond

// waitPolled is harness.WaitForEvery at slowPoll.
func waitPolled(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	return harness.WaitForEvery(ctx, timeout, slowPoll, cond)
}
