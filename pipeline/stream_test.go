package pipeline_test

// Unit tests of Stream, the at-least-once core, on in-memory sources and
// sinks: no broker.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
)

// memSource returns its batches in order, then blocks until ctx ends. It
// records the index of every batch acknowledged, in acknowledgement order,
// and calls onAck (if set) before recording it.
type memSource struct {
	batches [][]message.Message
	onAck   func(i int) error
	// endless makes it return a new one-message batch on every read once
	// batches are used up.
	endless bool

	mu      sync.Mutex
	next    int
	acks    []int
	drained chan struct{} // closed when a read finds no batch left
}

func newMemSource(batches [][]message.Message) *memSource {
	return &memSource{batches: batches, drained: make(chan struct{})}
}

func (s *memSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	if err := ctx.Err(); err != nil {
		return message.Batch{}, err
	}
	s.mu.Lock()
	i := s.next
	if i >= len(s.batches) && !s.endless {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
		s.mu.Unlock()
		<-ctx.Done()
		return message.Batch{}, ctx.Err()
	}
	s.next++
	var msgs []message.Message
	if i < len(s.batches) {
		msgs = s.batches[i]
	} else {
		msgs = []message.Message{{Topic: "in", Offset: int64(i), Value: []byte(fmt.Sprint("m", i))}}
	}
	s.mu.Unlock()
	return message.Batch{Messages: msgs, Ack: func(context.Context) error {
		if s.onAck != nil {
			if err := s.onAck(i); err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.acks = append(s.acks, i)
		s.mu.Unlock()
		return nil
	}}, nil
}

func (s *memSource) Close() error { return nil }

func (s *memSource) Connect(context.Context) error { return nil }

func (s *memSource) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

func (s *memSource) acked() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acks)
}

// memSink keeps what it was given. fail, if set, is consulted before each
// write: a non-nil error fails the whole write. gate, if set, blocks every
// write until it is closed (or ctx ends); entered is signalled (without
// blocking) when a write starts.
type memSink struct {
	fail    func(call int) error
	gate    chan struct{}
	entered chan struct{}

	mu    sync.Mutex
	calls int
	msgs  []message.Message
}

func (s *memSink) Write(ctx context.Context, msgs []message.Message) error {
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		if err := s.fail(s.calls); err != nil {
			return err
		}
	}
	s.msgs = append(s.msgs, msgs...)
	return nil
}

func (s *memSink) Close() error { return nil }

func (s *memSink) Connect(context.Context) error { return nil }

func (s *memSink) values() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = string(m.Value)
	}
	return out
}

// memProcessor copies each message to route "out"; a value "fail" makes
// Process return an error, "panic" makes it panic, "lost" routes it to a
// route the stream does not have, and a value starting "dead:" also routes
// a dead letter to "dead".
type memProcessor struct{}

func (memProcessor) Process(_ context.Context, msg message.Message) ([]pipeline.Routed, error) {
	v := string(msg.Value)
	switch {
	case v == "fail":
		return nil, errors.New("cannot process")
	case v == "panic":
		panic("processor bug")
	case v == "lost":
		return []pipeline.Routed{{Route: "nowhere", Msg: msg}}, nil
	}
	res := []pipeline.Routed{{Route: "out", Msg: message.Message{Key: msg.Key, Value: msg.Value}, Rows: 1}}
	if strings.HasPrefix(v, "dead:") {
		res = append(res, pipeline.Routed{Route: "dead", Msg: message.Message{Value: []byte("dl-" + v)}, Rows: 1, Reason: "bad_row"})
	}
	return res, nil
}

// memFailures routes a failed message to "dead" as {"error", "offset"};
// a message rejected as too large becomes "small:" and its offset on the
// same route.
type memFailures struct{}

func (memFailures) Failed(src message.Message, err error) []pipeline.Routed {
	v, _ := json.Marshal(map[string]any{"error": err.Error(), "offset": src.Offset})
	return []pipeline.Routed{{Route: "dead", Msg: message.Message{Value: v}, Reason: "failed"}}
}

func (memFailures) Rejected(src message.Message, r pipeline.Routed) []pipeline.Routed {
	return []pipeline.Routed{{Route: r.Route, Msg: message.Message{Value: []byte(fmt.Sprint("small:", src.Offset))}, Rows: r.Rows, Reason: "too_large"}}
}

// runStream starts st.Run and returns a function that cancels it and
// returns its result (failing the test if it does not end in 20 s).
func runStream(t *testing.T, st *pipeline.Stream) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- st.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-errc:
			case <-time.After(20 * time.Second):
				t.Fatal("Stream.Run did not return within 20 s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func newMemStream(src *memSource, out, dead message.Sink) *pipeline.Stream {
	return &pipeline.Stream{Source: src, Processor: memProcessor{}, Routes: map[string]message.Sink{"out": out, "dead": dead},
		Failures: memFailures{}, Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop(), Workers: 4}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func batchesOf(n, size int) [][]message.Message {
	var bs [][]message.Message
	for i := range n {
		var b []message.Message
		for j := range size {
			off := int64(i*size + j)
			b = append(b, message.Message{Topic: "in", Offset: off, Value: []byte(fmt.Sprint("m", off))})
		}
		bs = append(bs, b)
	}
	return bs
}

// Batches are acknowledged in the order they were read, each only once
// every output of its messages is in the sink.
func TestStreamAcksInOrderAfterOutputs(t *testing.T) {
	synctest.Test(t, testStreamAcksInOrderAfterOutputs)
}

func testStreamAcksInOrderAfterOutputs(t *testing.T) {
	const n, size = 30, 5
	batches := batchesOf(n, size)
	src := newMemSource(batches)
	out, dead := &memSink{}, &memSink{}
	// A varying write delay so that, were acks not ordered, a later batch
	// could overtake an earlier one.
	out.fail = func(call int) error { time.Sleep(time.Duration(call%3) * time.Millisecond); return nil }
	var early []string
	src.onAck = func(i int) error {
		have := out.values()
		for _, m := range batches[i] {
			if !slices.Contains(have, string(m.Value)) {
				early = append(early, string(m.Value))
			}
		}
		return nil
	}
	st := newMemStream(src, out, dead)
	stop := runStream(t, st)
	waitFor(t, "every batch acknowledged", func() bool { return len(src.acked()) == n })
	if err := stop(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if got := src.acked(); !slices.Equal(got, want) {
		t.Errorf("ack order %v, want %v", got, want)
	}
	if len(early) > 0 {
		t.Errorf("acknowledged before their outputs were written: %v", early)
	}
	if got := out.values(); len(got) != n*size {
		t.Errorf("%d outputs, want %d", len(got), n*size)
	}
	if st.Acked() != n*size {
		t.Errorf("Acked = %d, want %d", st.Acked(), n*size)
	}
	if got := pipelinetest.Value(st.Metrics.MessagesIn); got != n*size {
		t.Errorf("messages in %v, want %d", got, n*size)
	}
}

// On cancel the stream stops reading and drains: the batches it already
// read are processed, written and acknowledged before Run returns nil.
// If the sink does not recover within DrainTimeout, Run returns anyway and
// nothing more is acknowledged (the batches are redelivered).
func TestStreamDrainOnCancel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		release  bool // the sink recovers during the drain
		wantAcks []int
	}{
		{"drained", true, []int{0, 1, 2}},
		{"drain timeout", false, nil},
	} {
		t.Run(tc.name, bubble(func(t *testing.T) {
			src := newMemSource(batchesOf(3, 2))
			out := &memSink{gate: make(chan struct{})}
			st := newMemStream(src, out, &memSink{})
			st.DrainTimeout = 300 * time.Millisecond
			if tc.release {
				st.DrainTimeout = 20 * time.Second
			}
			stop := runStream(t, st)
			<-src.drained // all three batches read, the first held by the sink
			if got := src.acked(); len(got) != 0 {
				t.Fatalf("acknowledged %v while the sink blocks", got)
			}
			errc := make(chan error, 1)
			go func() { errc <- stop() }()
			if tc.release {
				synctest.Wait() // cancelled, now draining: blocked on the sink
				close(out.gate)
			}
			if err := <-errc; err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
			if got := src.acked(); !slices.Equal(got, tc.wantAcks) {
				t.Errorf("acknowledged %v, want %v", got, tc.wantAcks)
			}
			if got := src.reads(); got != 3 {
				t.Errorf("%d batches read, want 3 (no read after cancel)", got)
			}
		}))
	}
}

// A message the processor fails on (an error, a panic, an output to a
// route the stream does not have) does not stop the stream: Failures
// routes it, the rest of its batch goes out, and the batch is
// acknowledged.
func TestStreamProcessingErrorIsRouted(t *testing.T) {
	synctest.Test(t, testStreamProcessingErrorIsRouted)
}

func testStreamProcessingErrorIsRouted(t *testing.T) {
	batch := []message.Message{
		{Topic: "in", Partition: 2, Offset: 10, Value: []byte("ok1")},
		{Topic: "in", Partition: 2, Offset: 11, Value: []byte("fail")},
		{Topic: "in", Partition: 2, Offset: 12, Value: []byte("panic")},
		{Topic: "in", Partition: 2, Offset: 13, Value: []byte("lost")},
		{Topic: "in", Partition: 2, Offset: 14, Value: []byte("ok2")},
	}
	src := newMemSource([][]message.Message{batch, {{Topic: "in", Partition: 2, Offset: 15, Value: []byte("ok3")}}})
	out, dead := &memSink{}, &memSink{}
	st := newMemStream(src, out, dead)
	stop := runStream(t, st)
	waitFor(t, "both batches acknowledged", func() bool { return len(src.acked()) == 2 })
	if err := stop(); err != nil {
		t.Fatalf("Run = %v, want nil (a processing error is not fatal)", err)
	}
	if got := out.values(); !slices.Equal(got, []string{"ok1", "ok2", "ok3"}) {
		t.Errorf("outputs %v, want [ok1 ok2 ok3]", got)
	}
	dead.mu.Lock()
	dls := slices.Clone(dead.msgs)
	dead.mu.Unlock()
	wantErr := []string{"cannot process", "panic: processor bug", `unknown route "nowhere"`}
	if len(dls) != len(wantErr) {
		t.Fatalf("%d failed messages routed, want %d", len(dls), len(wantErr))
	}
	for i, d := range dls {
		var x struct {
			Error  string `json:"error"`
			Offset int64  `json:"offset"`
		}
		if err := json.Unmarshal(d.Value, &x); err != nil {
			t.Fatalf("failed message %d: %v", i, err)
		}
		if x.Offset != int64(11+i) || !strings.Contains(x.Error, wantErr[i]) {
			t.Errorf("failed message %d: %+v, want offset %d and an error containing %q", i, x, 11+i, wantErr[i])
		}
	}
	if got := pipelinetest.Value(st.Metrics.ProcessErrors); got != 3 {
		t.Errorf("process errors %v, want 3", got)
	}
}

// OnAck sees every message written for a batch, after the batch is
// acknowledged and only then; a message a sink rejects as too large is
// replaced by what Failures.Rejected routes (written once, acknowledged
// with its batch); a substitute the sink rejects too is retried, never
// dropped.
func TestStreamRoutesRejectedAndReportsAcked(t *testing.T) {
	synctest.Test(t, testStreamRoutesRejectedAndReportsAcked)
}

func testStreamRoutesRejectedAndReportsAcked(t *testing.T) {
	src := newMemSource([][]message.Message{{
		{Topic: "in", Offset: 0, Value: []byte("a")},
		{Topic: "in", Offset: 1, Value: []byte("dead:" + strings.Repeat("x", 100))},
	}})
	out := &memSink{}
	dead := &limitedSink{memSink: &memSink{}, max: 50}
	st := newMemStream(src, out, dead)
	var mu sync.Mutex
	var acked []pipeline.Routed
	st.OnAck = func(w []pipeline.Routed) {
		if len(src.acked()) != 1 {
			t.Errorf("OnAck before the batch was acknowledged")
		}
		mu.Lock()
		acked = append(acked, w...)
		mu.Unlock()
	}
	stop := runStream(t, st)
	waitFor(t, "the batch acknowledged", func() bool { return len(src.acked()) == 1 })
	waitFor(t, "OnAck", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) > 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := dead.values(); !slices.Equal(got, []string{"small:1"}) {
		t.Errorf("dead route %v, want the substitute of the rejected dead letter only: [small:1]", got)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, r := range acked {
		got = append(got, fmt.Sprintf("%s:%s:%d:%s", r.Route, r.Msg.Value, r.Rows, r.Reason))
	}
	slices.Sort(got)
	want := []string{"dead:small:1:1:too_large", "out:a:1:", "out:dead:" + strings.Repeat("x", 100) + ":1:"}
	if !slices.Equal(got, want) {
		t.Errorf("OnAck saw %q, want %q", got, want)
	}

	// A sink that rejects even the substitute: retried, not acknowledged.
	src = newMemSource([][]message.Message{{{Topic: "in", Offset: 0, Value: []byte("dead:" + strings.Repeat("x", 100))}}})
	st = newMemStream(src, &memSink{}, &limitedSink{memSink: &memSink{}, max: 1})
	st.DrainTimeout = 50 * time.Millisecond
	stop = runStream(t, st)
	waitFor(t, "two sink errors", func() bool { return pipelinetest.Value(st.Metrics.SinkErrors.WithLabelValues("dead")) >= 2 })
	if n := len(src.acked()); n != 0 {
		t.Errorf("%d batches acknowledged with a dead letter never written", n)
	}
	_ = stop()
}

// limitedSink rejects a message longer than max with message.ErrTooLarge.
type limitedSink struct {
	*memSink
	max int
}

func (s *limitedSink) Write(ctx context.Context, msgs []message.Message) error {
	for _, m := range msgs {
		if len(m.Value) > s.max {
			return fmt.Errorf("%d bytes: %w", len(m.Value), message.ErrTooLarge)
		}
	}
	return s.memSink.Write(ctx, msgs)
}

// When one sink fails, only that sink is written again: the other one's
// messages are not duplicated, and the batch is acknowledged once both
// have everything.
func TestStreamRetriesOnlyTheFailedSink(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failOut   bool
		failLabel string
	}{
		{"output fails", true, "out"},
		{"dead letter fails", false, "dead"},
	} {
		t.Run(tc.name, bubble(func(t *testing.T) {
			batch := []message.Message{
				{Topic: "in", Offset: 0, Value: []byte("a")},
				{Topic: "in", Offset: 1, Value: []byte("dead:b")},
			}
			src := newMemSource([][]message.Message{batch})
			failing := func(call int) error {
				if call <= 3 {
					return fmt.Errorf("broker unavailable (call %d)", call)
				}
				return nil
			}
			out, dead := &memSink{}, &memSink{}
			if tc.failOut {
				out.fail = failing
			} else {
				dead.fail = failing
			}
			st := newMemStream(src, out, dead)
			stop := runStream(t, st)
			waitFor(t, "the batch acknowledged", func() bool { return len(src.acked()) == 1 })
			if err := stop(); err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
			if got := out.values(); !slices.Equal(got, []string{"a", "dead:b"}) {
				t.Errorf("outputs %v, want each once: [a dead:b]", got)
			}
			if got := dead.values(); !slices.Equal(got, []string{"dl-dead:b"}) {
				t.Errorf("dead letters %v, want each once: [dl-dead:b]", got)
			}
			okSink, badSink := dead, out
			if !tc.failOut {
				okSink, badSink = out, dead
			}
			if okSink.calls != 1 || badSink.calls != 4 {
				t.Errorf("writes: healthy sink %d, failing sink %d; want 1 and 4", okSink.calls, badSink.calls)
			}
			if got := pipelinetest.Value(st.Metrics.SinkErrors.WithLabelValues(tc.failLabel)); got != 3 {
				t.Errorf("sink errors (%s) %v, want 3", tc.failLabel, got)
			}
		}))
	}
}

// A stalled sink stops the reads: the stream holds a bounded number of
// batches (channels of two between the stages) and reads again once the
// sink moves.
func TestStreamBackpressure(t *testing.T) { synctest.Test(t, testStreamBackpressure) }

func testStreamBackpressure(t *testing.T) {
	src := newMemSource(nil)
	src.endless = true
	out := &memSink{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	st := newMemStream(src, out, &memSink{})
	stop := runStream(t, st)
	<-out.entered
	// The endless source returns at once: without backpressure the reads
	// would run away while the sink is stalled. Wait returns once every
	// goroutine of the stream is blocked, that is once the reads stopped.
	synctest.Wait()
	// One batch in the write stage, two queued for it, one in the process
	// stage, two queued for it, one the reader holds: at most 7.
	const bound = 7
	held := src.reads()
	if held > bound {
		t.Fatalf("%d batches read while the sink is stalled, want at most %d", held, bound)
	}
	if got := src.acked(); len(got) != 0 {
		t.Fatalf("acknowledged %v while the sink is stalled", got)
	}
	// The endless source keeps the stream busy, so the bubble's clock
	// stands still: wait for an acknowledgement, not on time.
	resumed := make(chan struct{})
	src.onAck = func(i int) error {
		if i == held+10 {
			close(resumed)
		}
		return nil
	}
	close(out.gate)
	<-resumed // reads resumed past those held, and acknowledged in order
	if err := stop(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	acks := src.acked()
	for i, a := range acks {
		if a != i {
			t.Fatalf("ack order %v, want 0, 1, 2, …", acks)
		}
	}
}

// errSource fails its first reads with errs (in order), then behaves as
// memSource.
type errSource struct {
	*memSource
	mu   sync.Mutex
	errs []error
}

func (s *errSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	s.mu.Lock()
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		s.mu.Unlock()
		return message.Batch{}, err
	}
	s.mu.Unlock()
	return s.memSource.ReadBatch(ctx)
}

// Read errors: a transient one (message.ErrNotConnected, or any unmarked
// error) is retried while the stream reports not ready, and nothing is
// lost; message.ErrFatal, message.ErrEndOfInput and pipeline.ErrStop end
// the run with an error wrapping them.
func TestStreamReadErrors(t *testing.T) {
	t.Run("transient", bubble(func(t *testing.T) {
		src := &errSource{memSource: newMemSource(batchesOf(2, 2)), errs: []error{
			message.Mark(errors.New("broker down"), message.ErrNotConnected),
			errors.New("coordinator moved"),
		}}
		out := &memSink{}
		st := &pipeline.Stream{Source: src, Processor: memProcessor{}, Failures: memFailures{}, Routes: map[string]message.Sink{"out": out, "dead": &memSink{}},
			Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop()}
		stop := runStream(t, st)
		waitFor(t, "both batches acknowledged", func() bool { return len(src.acked()) == 2 })
		if !st.Ready() {
			t.Error("not ready after the source recovered")
		}
		if err := stop(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if got := pipelinetest.Value(st.Metrics.ReadErrors); got != 2 {
			t.Errorf("read errors %v, want 2", got)
		}
		if got := out.values(); len(got) != 4 {
			t.Errorf("outputs %v, want 4", got)
		}
	}))
	for _, sentinel := range []error{message.ErrFatal, message.ErrEndOfInput, pipeline.ErrStop} {
		t.Run(sentinel.Error(), bubble(func(t *testing.T) {
			src := &errSource{memSource: newMemSource(nil), errs: []error{
				message.Mark(errors.New("source says stop"), sentinel),
			}}
			st := &pipeline.Stream{Source: src, Processor: memProcessor{}, Failures: memFailures{}, Routes: map[string]message.Sink{"out": &memSink{}, "dead": &memSink{}},
				Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop()}
			errc := make(chan error, 1)
			go func() { errc <- st.Run(context.Background()) }()
			select {
			case err := <-errc:
				if !errors.Is(err, sentinel) {
					t.Errorf("Run = %v, want an error wrapping %v", err, sentinel)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the run did not end (the error was retried)")
			}
			if got := pipelinetest.Value(st.Metrics.ReadErrors); got != 0 {
				t.Errorf("read errors %v, want 0 (not retried)", got)
			}
		}))
	}
}

// A sink error marked message.ErrFatal (a file sink's disk error) is not
// retried: the run ends with it and the batch is not acknowledged.
func TestStreamStopsOnFatalSinkError(t *testing.T) {
	src := newMemSource(batchesOf(1, 2))
	out := &memSink{fail: func(int) error { return message.Mark(errors.New("disk full"), message.ErrFatal) }}
	st := newMemStream(src, out, &memSink{})
	errc := make(chan error, 1)
	go func() { errc <- st.Run(context.Background()) }()
	select {
	case err := <-errc:
		if !errors.Is(err, message.ErrFatal) || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("Run = %v, want the fatal sink error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end (the fatal error was retried)")
	}
	if out.calls != 1 || len(src.acked()) != 0 {
		t.Errorf("writes %d, acks %v; want 1 write and no ack", out.calls, src.acked())
	}
}

// A stream without a failure route (or without routes) does not start:
// it would have nowhere to put a message the processor fails on.
func TestStreamRequiresFailuresAndRoutes(t *testing.T) {
	for name, st := range map[string]*pipeline.Stream{
		"no failures": {Source: newMemSource(nil), Processor: memProcessor{}, Routes: map[string]message.Sink{"out": &memSink{}}},
		"no routes":   {Source: newMemSource(nil), Processor: memProcessor{}, Failures: memFailures{}},
	} {
		st.Metrics, st.Log = pipeline.NewMetrics(nil), zap.NewNop()
		if err := st.Run(context.Background()); err == nil {
			t.Errorf("%s: Run = nil, want an error", name)
		}
	}
}
