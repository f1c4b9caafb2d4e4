package pipeline_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/schemas"
)

// oneBatch delivers one batch, then blocks until ctx ends.
type oneBatch struct {
	b    message.Batch
	sent bool
}

func (s *oneBatch) Connect(context.Context) error { return nil }
func (s *oneBatch) Close() error                  { return nil }
func (s *oneBatch) ReadBatch(ctx context.Context) (message.Batch, error) {
	if !s.sent {
		s.sent = true
		return s.b, nil
	}
	<-ctx.Done()
	return message.Batch{}, ctx.Err()
}

// cutWrite's first Write blocks until its context ends (a fit-topic write
// in flight when SIGTERM arrives) and fails; later writes succeed unless
// their context is done.
type cutWrite struct {
	mu      sync.Mutex
	started chan struct{}
	cut     bool
	msgs    []message.Message
}

func (s *cutWrite) Write(ctx context.Context, msgs []message.Message) error {
	s.mu.Lock()
	if !s.cut {
		s.cut = true
		s.mu.Unlock()
		close(s.started)
		<-ctx.Done()
		return errors.New("write cut short: " + ctx.Err().Error())
	}
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err // as a real sink: nothing is written on a done context
	}
	s.msgs = append(s.msgs, msgs...)
	return nil
}

func (s *cutWrite) published() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.msgs) }

// drainRun is a km engine under an AggregatorRunner on one batch of 50
// records, its window open at the start clock.
type drainRun struct {
	reg    *prometheus.Registry
	ledger *ledger.Ledger
	eng    *aggregators.Engine
	clock  *pipelinetest.Clock
	start  time.Time
	cancel context.CancelFunc
	done   chan error
}

// startDrainRun starts Run with backend and fits, and waits until the 50
// records are counted.
func startDrainRun(t *testing.T, backend ledger.Backend, fits aggregators.Publisher, idPrefix string, drain time.Duration) *drainRun {
	t.Helper()
	ctx := context.Background()
	spec := schemas.Spec{Cohorts: pipelinetest.Cohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	v, err := schemas.NewValidator(spec, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	d := &drainRun{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	d.ledger, err = ledger.Open(ctx, backend, ledger.Options{Budget: map[string]float64{"stream": 100}, Registerer: d.reg})
	if err != nil {
		t.Fatal(err)
	}
	d.start = time.Unix(1_700_000_000, 0).Truncate(time.Minute).Add(10 * time.Second)
	d.clock = pipelinetest.NewClock(d.start)
	km := aggregators.Config{Name: "km", Kind: aggregators.KindKM, Window: aggregators.Window{Size: time.Minute}, Epsilon: 1,
		Cohorts: pipelinetest.Cohorts, TimeMax: 3000, TimeUnit: "days", Params: aggregators.KMParams{Method: aggregators.MethodNoisyHistogram, BinWidth: 500}}
	d.eng, err = aggregators.NewEngine(ctx, aggregators.EngineConfig{Aggregates: []aggregators.Config{km}, Topic: "in", Ledger: d.ledger,
		State: &ledger.MemoryState{}, Fits: fits, Clock: d.clock, Noise: dp.NewSeededSource(1), Metrics: aggregators.NewMetrics(d.reg)})
	if err != nil {
		t.Fatal(err)
	}
	src := &oneBatch{b: message.Batch{Messages: []message.Message{{Partition: 0, Offset: 0,
		Value: pipelinetest.RowsMessage(t, pipelinetest.SeqIDs(idPrefix, 50), false)}}, Ack: func(context.Context) error { return nil }}}
	decode := func(b []byte) arrow.Record { good, _ := v.DecodeIPC(b); return good }
	r := &pipeline.AggregatorRunner{Source: src, Engine: aggregators.Feed{Engine: d.eng, Decode: decode}, Tick: 5 * time.Millisecond, DrainTimeout: drain}
	rctx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	t.Cleanup(cancel)
	go func() { d.done <- r.Run(rctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for pipelinetest.Metric(d.reg, "dpsurv_aggregator_records_total", nil) < 50 {
		if time.Now().After(deadline) {
			t.Fatal("the records were never counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return d
}

// stop cancels the run and waits for Run to return nil.
func (d *drainRun) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
}

// A clean stop (the SIGTERM path: the run context is cancelled) while a
// charged window's fit-topic write is in flight publishes that window
// before Run returns (issue 21: it stayed unpublished until a later start).
// It runs in a synctest bubble (see bubble): the drain's seconds pass on
// the fake clock, not the machine's.
func TestAggregatorRunnerStopPublishesChargedWindow(t *testing.T) {
	synctest.Test(t, testStopPublishesChargedWindow)
}

func testStopPublishesChargedWindow(t *testing.T) {
	fits := &cutWrite{started: make(chan struct{})}
	// The cut write waits 2 s (half the drain) before the drain writes it again.
	d := startDrainRun(t, &ledger.Memory{}, fits, "drain-", 4*time.Second)
	d.clock.Set(d.start.Add(time.Minute)) // the window closes: released, charged, written
	select {
	case <-fits.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the window's fit-topic write never started")
	}
	if d.ledger.Spent("stream") != 1 {
		t.Fatalf("stream spent %v before the write, want 1 (charged)", d.ledger.Spent("stream"))
	}
	d.stop(t) // SIGTERM during the write
	if n := fits.published(); n != len(pipelinetest.Cohorts) {
		t.Fatalf("%d fit messages published after the stop, want %d (the charged window)", n, len(pipelinetest.Cohorts))
	}
	if p := d.eng.Pending(); p != 0 {
		t.Errorf("%d windows pending after the stop, want 0", p)
	}
}

// holdAppend is a ledger backend whose first Append blocks until the test
// lets it go, then persists only if its context is still live (an append
// cut short by the stop persists nothing).
type holdAppend struct {
	ledger.Memory
	started, release chan struct{}
	once             sync.Once
	ctxErr           error
}

func (b *holdAppend) Append(ctx context.Context, e ledger.Entry) error {
	first := false
	b.once.Do(func() { first = true })
	if first {
		close(b.started)
		select {
		case <-b.release:
		case <-ctx.Done():
		}
		b.ctxErr = ctx.Err()
		if b.ctxErr != nil {
			return b.ctxErr
		}
	}
	return b.Memory.Append(ctx, e)
}

// A stop that comes while a window's ledger append is in flight does not
// cut the append short (that leaves the window charged or not, unknown
// until a later holder reads the ledger): the append completes, and the
// window is charged once and published before Run returns.
// In a synctest bubble, like the test above.
func TestAggregatorRunnerStopLetsLedgerAppendFinish(t *testing.T) {
	synctest.Test(t, testStopLetsLedgerAppendFinish)
}

func testStopLetsLedgerAppendFinish(t *testing.T) {
	backend := &holdAppend{started: make(chan struct{}), release: make(chan struct{})}
	fits := &cutWrite{started: make(chan struct{}), cut: true} // every write succeeds
	d := startDrainRun(t, backend, fits, "hold-", 20*time.Second)
	d.clock.Set(d.start.Add(time.Minute)) // the window closes: its release is appended to the ledger
	select {
	case <-backend.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the window's ledger append never started")
	}
	d.cancel() // SIGTERM during the append
	time.Sleep(50 * time.Millisecond)
	close(backend.release)
	d.stop(t)
	if backend.ctxErr != nil {
		t.Fatalf("the in-flight ledger append was cut short by the stop: %v", backend.ctxErr)
	}
	if got := len(backend.Entries()); got != 1 {
		t.Errorf("%d ledger entries, want 1 (the window charged once)", got)
	}
	if n := fits.published(); n != len(pipelinetest.Cohorts) {
		t.Fatalf("%d fit messages published after the stop, want %d (the charged window)", n, len(pipelinetest.Cohorts))
	}
	if p := d.eng.Pending(); p != 0 {
		t.Errorf("%d windows pending after the stop, want 0", p)
	}
}
