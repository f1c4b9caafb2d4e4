package pipeline_test

// Unit tests of the Connect lifecycle on in-memory sources and sinks.

import (
	"context"
	"errors"
	"slices"
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

// connectLog records, in order, every Connect and the first read.
type connectLog struct {
	mu     sync.Mutex
	events []string
}

func (l *connectLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *connectLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// connectingSource fails its first connects with errs (one per call),
// logs each Connect and each read, and after its first batch fails one
// read with message.ErrNotConnected.
type connectingSource struct {
	*memSource
	log      *connectLog
	mu       sync.Mutex
	errs     []error
	reads    int
	dropOnce bool
}

func (s *connectingSource) Connect(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.add("connect source")
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return err
	}
	return nil
}

func (s *connectingSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	s.mu.Lock()
	s.reads++
	drop := s.dropOnce && s.reads == 2
	s.mu.Unlock()
	if drop {
		s.log.add("read: not connected")
		return message.Batch{}, message.Mark(errors.New("connection reset"), message.ErrNotConnected)
	}
	s.log.add("read")
	return s.memSource.ReadBatch(ctx)
}

type connectingSink struct {
	*memSink
	name string
	log  *connectLog
	err  error // returned by every Connect when set
}

func (s *connectingSink) Connect(context.Context) error {
	s.log.add("connect " + s.name)
	return s.err
}

// The stream connects its sinks first and its source last, retries a
// failing connect, reads only once connected, and connects the source
// again after a read error marked message.ErrNotConnected.
func TestStreamConnectsSinksThenSource(t *testing.T) {
	synctest.Test(t, testStreamConnectsSinksThenSource)
}

func testStreamConnectsSinksThenSource(t *testing.T) {
	log := &connectLog{}
	src := &connectingSource{memSource: newMemSource(batchesOf(2, 1)), log: log, dropOnce: true,
		errs: []error{message.Mark(errors.New("refused"), message.ErrNotConnected), errors.New("timeout")}}
	out := &connectingSink{memSink: &memSink{}, name: "out", log: log}
	dead := &connectingSink{memSink: &memSink{}, name: "dead", log: log}
	st := &pipeline.Stream{Source: src, Processor: memProcessor{}, Failures: memFailures{},
		Routes: map[string]message.Sink{"out": out, "dead": dead}, Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop()}
	stop := runStream(t, st)
	waitFor(t, "both batches acknowledged", func() bool { return len(src.acked()) == 2 })
	if err := stop(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	got := log.get()
	want := []string{"connect dead", "connect out", "connect source", "connect source", "connect source", "read",
		"read: not connected", "connect source", "read"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("events %q, want them to start with %q", got, want)
	}
	if n := pipelinetest.Value(st.Metrics.ReadErrors); n != 3 {
		t.Errorf("read errors %v, want 3 (two failed connects, one lost connection)", n)
	}
}

// A connect error marked message.ErrFatal (a rejected credential) ends
// the run without reading, whether a sink's or the source's.
func TestStreamFatalConnectEndsTheRun(t *testing.T) {
	fatal := message.Mark(errors.New("SASL authentication failed"), message.ErrFatal)
	for _, tc := range []struct {
		name               string
		sinkErr, sourceErr error
	}{{"sink", fatal, nil}, {"source", nil, fatal}} {
		t.Run(tc.name, func(t *testing.T) {
			log := &connectLog{}
			src := &connectingSource{memSource: newMemSource(batchesOf(1, 1)), log: log}
			if tc.sourceErr != nil {
				src.errs = []error{tc.sourceErr}
			}
			st := &pipeline.Stream{Source: src, Processor: memProcessor{},
				Failures: memFailures{}, Routes: map[string]message.Sink{
					"out":  &connectingSink{memSink: &memSink{}, name: "out", log: log, err: tc.sinkErr},
					"dead": &connectingSink{memSink: &memSink{}, name: "dead", log: log}},
				Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop()}
			errc := make(chan error, 1)
			go func() { errc <- st.Run(context.Background()) }()
			select {
			case err := <-errc:
				if !errors.Is(err, message.ErrFatal) {
					t.Errorf("Run = %v, want an error wrapping message.ErrFatal", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the run did not end (the fatal connect error was retried)")
			}
			if slices.Contains(log.get(), "read") {
				t.Errorf("events %q: read without a connection", log.get())
			}
		})
	}
}
