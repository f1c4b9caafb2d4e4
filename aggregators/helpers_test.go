package aggregators_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/schemas"
)

var cohorts = []string{"A", "B"}

func spec() schemas.Spec {
	return schemas.Spec{Cohorts: cohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}
}

func newClock(t time.Time) *pipelinetest.Clock { return pipelinetest.NewClock(t) }

// captureSink records what is written; Fail makes writes fail, and
// OnFail, if set, is called with the number of writes failed so far.
type captureSink struct {
	mu     sync.Mutex
	msgs   []message.Message
	Fail   error
	OnFail func(failed int)
	failed int
}

func (s *captureSink) Write(_ context.Context, msgs []message.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail != nil {
		s.failed++
		if s.OnFail != nil {
			s.OnFail(s.failed)
		}
		return s.Fail
	}
	s.msgs = append(s.msgs, msgs...)
	return nil
}

func (s *captureSink) Close() error { return nil }

func (s *captureSink) Messages() []message.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]message.Message(nil), s.msgs...)
}

// fits decodes every captured message, by key.
func (s *captureSink) fits(t *testing.T) map[string]aggregators.FitMessage {
	t.Helper()
	out := map[string]aggregators.FitMessage{}
	for _, m := range s.Messages() {
		var f aggregators.FitMessage
		if err := json.Unmarshal(m.Value, &f); err != nil {
			t.Fatalf("fit message %s: %v", m.Key, err)
		}
		if f.Key != string(m.Key) {
			t.Fatalf("message key %s, JSON key %s", m.Key, f.Key)
		}
		dropEmptyRows(&f)
		out[string(m.Key)] = f
	}
	return out
}

// countingSource counts draws (to show that a replay draws nothing).
type countingSource struct {
	src dp.Source
	n   atomic.Int64
}

func (c *countingSource) Uint64() uint64 { c.n.Add(1); return c.src.Uint64() }

// rig is an engine with in-memory ledger and state that can be "restarted"
// over the same storage.
type rig struct {
	t       *testing.T
	aggs    []aggregators.Config
	budget  map[string]float64
	backend *ledger.Memory
	state   *ledger.MemoryState
	clock   *pipelinetest.Clock
	fits    *captureSink
	noise   *countingSource
	reg     *prometheus.Registry
	led     *ledger.Ledger
	eng     *aggregators.Engine
}

func newRig(t *testing.T, start time.Time, budget map[string]float64, aggs ...aggregators.Config) *rig {
	r := &rig{t: t, aggs: aggs, budget: budget, backend: &ledger.Memory{}, state: &ledger.MemoryState{},
		clock: newClock(start), fits: &captureSink{}}
	r.start(1)
	return r
}

// start (re)opens the ledger and the engine over the rig's storage, as a
// restarted process would.
func (r *rig) start(seed uint64) {
	r.t.Helper()
	ctx := context.Background()
	r.reg = prometheus.NewRegistry()
	l, err := ledger.Open(ctx, r.backend, ledger.Options{Budget: r.budget, Registerer: r.reg})
	if err != nil {
		r.t.Fatal(err)
	}
	r.led = l
	r.noise = &countingSource{src: dp.NewSeededSource(seed)}
	e, err := aggregators.NewEngine(ctx, aggregators.EngineConfig{
		Aggregates: r.aggs, Topic: "in", Ledger: l, State: r.state, Fits: r.fits, Clock: r.clock,
		Noise: r.noise, Metrics: aggregators.NewMetrics(r.reg),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng = e
}

func (r *rig) tick() bool {
	r.t.Helper()
	saved, err := r.eng.Tick(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return saved
}

// observe feeds one message of rows at (partition 0, offset).
func (r *rig) observe(offset int64, rows schemas.Rows) {
	r.t.Helper()
	rec := canonical(r.t, rows)
	defer rec.Release()
	if err := r.eng.Observe(0, offset, rec); err != nil {
		r.t.Fatal(err)
	}
}

func canonical(t testing.TB, rows schemas.Rows) arrow.Record {
	t.Helper()
	if rows.Covariates == nil {
		rows.Covariates = [][]float64{}
	}
	rec, err := schemas.BuildCanonical(spec(), rows, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// observeWindow observes n records (patients "w<w>-…") in the 5-second
// window w, the clock at its second 1, and moves the clock to the window's
// end.
func observeWindow(t *testing.T, e *aggregators.Engine, clock *pipelinetest.Clock, w, n int) {
	t.Helper()
	clock.Set(at(5*w + 1))
	r := canonical(t, rowsOf(fmt.Sprintf("w%d", w), n))
	if err := e.Observe(0, int64(w), r); err != nil {
		t.Fatal(err)
	}
	r.Release()
	clock.Set(at(5*w + 5))
}

// decodeTable decodes a curve table (an Arrow IPC stream), failing the test
// on an error; the caller releases the records (releaseAll).
func decodeTable(t *testing.T, tab []byte, mem memory.Allocator) []arrow.Record {
	t.Helper()
	recs, err := arrowipc.DecodeRecords(tab, mem)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func releaseAll(recs []arrow.Record) {
	for _, rec := range recs {
		rec.Release()
	}
}

// rowsOf builds n rows with distinct ids (prefix p), integer times cycling
// over [1, 9], every third censored, cohorts alternating.
func rowsOf(p string, n int) schemas.Rows {
	var r schemas.Rows
	for i := range n {
		r.ID = append(r.ID, fmt.Sprintf("%s-%d", p, i))
		r.Time = append(r.Time, float64(1+i%9))
		r.Event = append(r.Event, i%3 != 0)
		r.Cohort = append(r.Cohort, int32(i%len(cohorts)))
	}
	return r
}

// metric is pipelinetest.Metric (the sum of the series of a counter or
// gauge whose labels include labels); a registry that cannot be gathered
// fails the test.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	v := pipelinetest.Metric(reg, name, labels)
	if math.IsNaN(v) {
		t.Fatalf("metric %s: the registry cannot be gathered", name)
	}
	return v
}

// kmConfig is a km aggregate with the flat noisy histogram, whose noise law
// the tests check (the hierarchical method is tested in its own cases).
func kmConfig(name string, size time.Duration, eps float64) aggregators.Config {
	return aggregators.Config{Name: name, Kind: aggregators.KindKM, Window: aggregators.Window{Size: size}, Epsilon: eps,
		Cohorts: cohorts, TimeMax: 9, TimeUnit: "days", Params: aggregators.KMParams{Method: aggregators.MethodNoisyHistogram, BinWidth: 1}}
}

// dropEmptyRows removes the rows of a km release without events or
// censorings: a private curve has a row in every bin (its interval widens
// with every bin's noise), an exact curve only at event and censoring
// times.
func dropEmptyRows(f *aggregators.FitMessage) {
	k := f.KMFields
	if k == nil {
		return
	}
	cols := []*schemas.NullableSeries{&k.Time, &k.NRisk, &k.NEvent, &k.NCensor, &k.Surv, &k.StdErr, &k.Lower, &k.Upper,
		&k.NoiseStdErr, &k.SamplingStdErr, &k.SamplingLower, &k.SamplingUpper}
	keep := []int{}
	for i := range k.Time {
		if i < len(k.NEvent) && i < len(k.NCensor) && k.NEvent[i] == 0 && k.NCensor[i] == 0 {
			continue
		}
		keep = append(keep, i)
	}
	n := len(k.Time)
	for _, c := range cols {
		if len(*c) != n {
			continue
		}
		out := make([]aggregators.F, 0, len(keep))
		for _, i := range keep {
			out = append(out, (*c)[i])
		}
		*c = out
	}
}

// setParams edits c's params as the kind's type P (its zero value when c
// has none or another kind's).
func setParams[P aggregators.Params](c *aggregators.Config, edit func(p *P)) {
	p, _ := c.Params.(P)
	edit(&p)
	c.Params = p
}
