package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// Fixture is one end-to-end test's world: an in-process broker (unless the
// config names brokers), the topics, a debug log the test can search, a
// checked allocator, a fake clock and the services it runs on them. Every
// part is closed by t.Cleanup, services before the broker.
type Fixture struct {
	T       testing.TB
	Ctx     context.Context // ends at the fixture's timeout or cleanup
	Cluster *broker.Cluster // nil when the config named brokers
	Config  app.Config      // with the broker's addresses, validated
	Key     []byte
	Logs    *Logs
	Log     *zap.Logger
	Mem     *memory.CheckedAllocator
	Clock   *Clock // nil unless the Clock option was given
	tick    time.Duration
}

// Option adjusts Start and New.
type Option func(*settings)

type settings struct {
	partitions int
	topics     map[string]int
	timeout    time.Duration
	key        []byte
	clock      *Clock
	tick       time.Duration
	noValidate bool
}

// Partitions is the in-process broker's default partition count (1).
func Partitions(n int) Option { return func(s *settings) { s.partitions = n } }

// Topics are made besides the input topic (name → partitions).
func Topics(topics map[string]int) Option {
	return func(s *settings) {
		for k, v := range topics {
			s.topics[k] = v
		}
	}
}

// Timeout bounds the fixture's context (default 60 s).
func Timeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// Key is the sanitizers' PRF key (default 32 bytes of 7).
func Key(k []byte) Option { return func(s *settings) { s.key = k } }

// FakeClock drives the aggregators' windows from a clock set to start,
// checked every 20 ms; the test moves it with Fixture.Clock.Set.
func FakeClock(start time.Time) Option {
	return func(s *settings) { s.clock, s.tick = NewClock(start), 20*time.Millisecond }
}

// NoValidate skips cfg.Validate (for tests of what the service does with
// a config that validation would refuse).
func NoValidate() Option { return func(s *settings) { s.noValidate = true } }

// New prepares a fixture without a service: the broker (when
// cfg.Kafka.Brokers is empty; its addresses are written into the config),
// the input topic with cfg.Input.Partitions and the Topics option's topics.
// A test produces its input with Produce and then calls Run.
func New(t testing.TB, cfg app.Config, opts ...Option) *Fixture {
	t.Helper()
	s := settings{partitions: 1, topics: map[string]int{}, timeout: 60 * time.Second, key: bytes.Repeat([]byte{7}, 32)}
	for _, o := range opts {
		o(&s)
	}
	f := &Fixture{T: t, Config: cfg, Key: s.key, Logs: &Logs{}, Clock: s.clock, tick: s.tick,
		Mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	f.Log = f.Logs.Logger()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	t.Cleanup(cancel)
	f.Ctx = ctx
	if len(f.Config.Kafka.Brokers) == 0 {
		f.Cluster, _ = brokertest.Start(t, broker.Options{Partitions: s.partitions})
		f.Config.Kafka.Brokers = f.Cluster.Addrs()
	}
	if !s.noValidate {
		if err := f.Config.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if f.Config.Input.Topic != "" && f.Config.Input.Partitions > 0 {
		if _, ok := s.topics[f.Config.Input.Topic]; !ok {
			s.topics[f.Config.Input.Topic] = f.Config.Input.Partitions
		}
	}
	if err := kafkaconn.EnsureTopics(ctx, f.Config.Kafka, s.topics, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// Start is New and Run: a running service on a fresh broker.
func Start(t testing.TB, cfg app.Config, opts ...Option) (*Fixture, *Service) {
	t.Helper()
	f := New(t, cfg, opts...)
	return f, f.Run()
}

// Service is a running app.Service with its own metrics registry.
type Service struct {
	*app.Service
	t      testing.TB
	ctx    context.Context // the context it runs under (before its cancel)
	cancel context.CancelFunc
	exited chan struct{} // closed when Run has returned err
	err    error
}

// Run starts a service on the fixture's config, key, log, allocator and
// clock with a new registry; edit, when given, adjusts it before it runs
// (a transport, a processor). Cleanup stops it and fails the test if it
// does not stop within 30 s.
func (f *Fixture) Run(edit ...func(*app.Service)) *Service {
	f.T.Helper()
	svc := &app.Service{Config: f.Config, Key: f.Key, Log: f.Log, Mem: f.Mem, Registry: prometheus.NewRegistry()}
	if f.Clock != nil {
		svc.Clock, svc.AggregatorTick = f.Clock, f.tick
	}
	for _, e := range edit {
		e(svc)
	}
	return RunService(f.T, f.Ctx, svc)
}

// RunService runs svc, built by the test (its own broker, transport or
// registry), until ctx ends or Stop is called. Cleanup stops it and fails
// the test if it does not stop within 30 s.
func RunService(t testing.TB, ctx context.Context, svc *app.Service) *Service {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	s := &Service{Service: svc, t: t, ctx: ctx, cancel: cancel, exited: make(chan struct{})}
	go func() { s.err = svc.Run(runCtx); close(s.exited) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Error("service did not stop")
		}
	})
	return s
}

// Stop cancels the service and returns Run's error (nil on a clean
// stop); later calls return the same error.
func (s *Service) Stop() error {
	s.cancel()
	return s.Wait()
}

// Wait waits for Run to return by itself (a failure, a simulated crash)
// and returns its error; later calls return the same error.
func (s *Service) Wait() error {
	<-s.exited
	return s.err
}

// Exited is closed when Run has returned (Wait then returns its error).
func (s *Service) Exited() <-chan struct{} { return s.exited }

// StopOK stops the service and fails the test if Run returned an error.
func (s *Service) StopOK() {
	s.t.Helper()
	if err := s.Stop(); err != nil {
		s.t.Fatalf("run: %v", err)
	}
}

// Waiting fails the test when the service has exited (Fatal) or is ready
// (Error) while it should be waiting, because what ("topic out is
// missing").
func (s *Service) Waiting(what string) {
	s.t.Helper()
	select {
	case <-s.exited:
		s.t.Fatalf("the service ended while %s: %v", what, s.err)
	default:
	}
	if s.Ready() {
		s.t.Errorf("ready while %s", what)
	}
}

// WaitFor polls cond until it holds; it fails the test when the service
// exits first, the timeout passes or the fixture's context ends.
func (s *Service) WaitFor(timeout time.Duration, what string, cond func() bool) {
	s.t.Helper()
	switch poll(s.ctx, timeout, s.exited, cond) {
	case exited:
		s.t.Fatalf("service exited while waiting for %s: %v", what, s.err)
	case timedOut:
		s.t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Metric is the sum of the service's series of the named counter or gauge
// whose labels include labels.
func (s *Service) Metric(name string, labels map[string]string) float64 {
	return Metric(s.Service.Registry, name, labels)
}

// WaitFor polls cond until it holds; it fails the test with the log's
// tail when the timeout passes or the fixture's context ends.
func (f *Fixture) WaitFor(timeout time.Duration, what string, cond func() bool) {
	f.T.Helper()
	if poll(f.Ctx, timeout, nil, cond) != held {
		f.T.Fatalf("timed out waiting for %s\n%s", what, f.Logs.Tail())
	}
}

type pollResult int

const (
	held pollResult = iota
	timedOut
	exited
)

// poll checks cond every 10 ms until it holds, the timeout passes, ctx
// ends or stop is closed (nil: never).
func poll(ctx context.Context, timeout time.Duration, stop <-chan struct{}, cond func() bool) pollResult {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-stop:
			return exited
		case <-ctx.Done():
			return timedOut
		case <-deadline.C:
			if cond() {
				return held
			}
			return timedOut
		case <-tick.C:
		}
	}
	return held
}

// Produce writes msgs to topic, durably.
func (f *Fixture) Produce(topic string, msgs []message.Message) {
	f.T.Helper()
	w, err := sinks.NewKafka(sinks.KafkaConfig{Conn: f.Config.Kafka, Topic: topic}, f.Log)
	if err != nil {
		f.T.Fatal(err)
	}
	defer w.Close()
	const chunk = 64
	for lo := 0; lo < len(msgs); lo += chunk {
		if err := w.Write(f.Ctx, msgs[lo:min(lo+chunk, len(msgs))]); err != nil {
			f.T.Fatalf("produce to %s: %v", topic, err)
		}
	}
}

// Reader reads a topic from its start with its own consumer group.
type Reader struct {
	f   *Fixture
	src *sources.Kafka
}

// Read opens a reader of topic in consumer group group, closed by cleanup.
func (f *Fixture) Read(topic, group string) *Reader {
	f.T.Helper()
	src, err := sources.NewKafka(sources.KafkaConfig{Conn: f.Config.Kafka, Topic: topic, GroupID: group}, f.Log)
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { _ = src.Close() })
	return &Reader{f: f, src: src}
}

// Next returns the next batch of messages, acknowledged; it fails the test
// (with the log's tail) when none comes before the fixture's context ends.
func (r *Reader) Next() []message.Message {
	r.f.T.Helper()
	b, err := r.src.ReadBatch(r.f.Ctx)
	if err == nil {
		err = b.Ack(r.f.Ctx)
	}
	if err != nil {
		r.f.T.Fatalf("read: %v\n%s", err, r.f.Logs.Tail())
	}
	return b.Messages
}

// Metric is the sum of reg's series of the named counter or gauge whose
// labels include labels (NaN when reg cannot be gathered):
// pipelinetest.Metric, here for the fixture's users.
func Metric(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	return pipelinetest.Metric(reg, name, labels)
}

// Clock is a settable aggregators.Clock: pipelinetest.Clock, here for the
// fixture's users.
type Clock = pipelinetest.Clock

// NewClock is a clock at now.
func NewClock(now time.Time) *Clock { return pipelinetest.NewClock(now) }

// Logs collects JSON log lines from several goroutines.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines are the JSON log lines logged so far whose msg is msg.
func (l *Logs) Lines(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Tail is the last 3000 bytes logged, for a failure message.
func (l *Logs) Tail() string {
	s := l.String()
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

// Logger is a debug-level JSON logger writing to l.
func (l *Logs) Logger() *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(l), zapcore.DebugLevel))
}
