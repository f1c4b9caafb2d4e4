package ops

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/message"
)

// TestHistogramQuantiles checks the histogram against exact order
// statistics: the reported quantile is never below the exact value and at
// most 2 % above it (deterministic: the data come from a seeded source).
func TestHistogramQuantiles(t *testing.T) {
	src := dp.NewSeededSource(11)
	tests := []struct {
		name string
		gen  func() time.Duration
		n    int
	}{
		{"uniform 1-100 ms", func() time.Duration {
			return time.Millisecond + time.Duration(dp.Float64(src)*float64(99*time.Millisecond))
		}, 5000},
		{"log-uniform 50 us - 20 s", func() time.Duration {
			return time.Duration(50e3 * math.Exp(dp.Float64(src)*math.Log(20e9/50e3)))
		}, 5000},
		{"constant 3 ms", func() time.Duration { return 3 * time.Millisecond }, 100},
		{"below range", func() time.Duration { return time.Microsecond }, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistogram()
			xs := make([]time.Duration, tc.n)
			for i := range xs {
				xs[i] = tc.gen()
				h.Observe(xs[i], 1)
			}
			slices.Sort(xs)
			if h.Count() != uint64(tc.n) || h.Max() != xs[len(xs)-1] {
				t.Fatalf("count %d max %v, want %d and %v", h.Count(), h.Max(), tc.n, xs[len(xs)-1])
			}
			for _, q := range []float64{0.01, 0.5, 0.95, 0.99, 1} {
				exact := xs[int(math.Ceil(q*float64(tc.n)))-1]
				got := h.Quantile(q)
				lo := exact
				if lo < histMin {
					lo = 0 // values under the range report the range floor
				}
				if got < lo || float64(got) > 1.02*float64(max(exact, histMin))+1 {
					t.Errorf("q=%v: got %v, exact %v (want within [exact, 1.02 exact])", q, got, exact)
				}
			}
		})
	}
	h := NewHistogram()
	if h.Quantile(0.5) != 0 || h.Mean() != 0 {
		t.Error("empty histogram should report 0")
	}
	h.Observe(10*time.Millisecond, 3)
	h.Observe(40*time.Millisecond, 1)
	if h.Count() != 4 || h.Mean() != 17500*time.Microsecond {
		t.Errorf("weighted: count %d mean %v, want 4 and 17.5ms", h.Count(), h.Mean())
	}
	h.Reset()
	if h.Count() != 0 || h.Max() != 0 {
		t.Error("reset did not empty the histogram")
	}
}

func TestAnalyzeGrowth(t *testing.T) {
	series := func(n int, f func(i int) float64) []MemSample {
		out := make([]MemSample, n)
		for i := range out {
			out[i] = MemSample{At: float64(i), HeapLiveMiB: f(i)}
		}
		return out
	}
	tests := []struct {
		name    string
		samples []MemSample
		flagged bool
		verdict string
	}{
		{"flat", series(40, func(int) float64 { return 30 }), false, "no growth"},
		{"warm-up then flat", series(40, func(i int) float64 { return 30 + 40*math.Exp(-float64(i)) }), false, "no growth"},
		{"GC sawtooth", series(40, func(i int) float64 { return 30 + 10*float64(i%3) }), false, "no growth"},
		{"linear leak", series(40, func(i int) float64 { return 20 + 2*float64(i) }), true, "GROWTH"},
		{"small heap doubling (below the absolute floor)", series(40, func(i int) float64 { return 5 + 0.2*float64(i) }), false, "no growth"},
		{"too few samples", series(5, func(i int) float64 { return float64(100 * i) }), false, "too few samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := AnalyzeGrowth(tc.samples)
			if g.Flagged != tc.flagged || !strings.Contains(g.Verdict, tc.verdict) {
				t.Fatalf("flagged %v verdict %q, want %v and %q", g.Flagged, g.Verdict, tc.flagged, tc.verdict)
			}
		})
	}
	if s := ReadMem(); s.HeapInuseMiB <= 0 || s.SysMiB <= 0 || s.Goroutines < 1 {
		t.Errorf("ReadMem: %+v", s)
	}
}

// memSink records what reaches it.
type memSink struct {
	mu   sync.Mutex
	msgs []message.Message
}

func (m *memSink) Write(_ context.Context, msgs []message.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, msgs...)
	return nil
}

func (m *memSink) Close() error { return nil }

func (m *memSink) Connect(context.Context) error { return nil }

func TestSlowSink(t *testing.T) {
	msgs := func(n int) []message.Message {
		out := make([]message.Message, n)
		for i := range out {
			out[i] = message.Message{Value: []byte{byte(i)}}
		}
		return out
	}
	tests := []struct {
		name      string
		delay     time.Duration
		failEvery int
		writes    int
		wantFail  int
		wantMsgs  int // messages reaching the inner sink (partial writes included)
	}{
		{"delay only", 5 * time.Millisecond, 0, 4, 0, 16},
		{"every 2nd write fails after half", time.Millisecond, 2, 4, 2, 2*4 + 2*2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inner := &memSink{}
			s := &SlowSink{Sink: inner, Delay: tc.delay, Jitter: tc.delay, FailEvery: tc.failEvery, Src: dp.NewSeededSource(3)}
			start := time.Now()
			fails := 0
			for range tc.writes {
				if err := s.Write(context.Background(), msgs(4)); err != nil {
					if !errors.Is(err, ErrInjected) {
						t.Fatalf("unexpected error %v", err)
					}
					fails++
				}
			}
			if el := time.Since(start); el < time.Duration(tc.writes)*tc.delay {
				t.Errorf("%d writes took %v, want >= %v", tc.writes, el, time.Duration(tc.writes)*tc.delay)
			}
			st := s.Stats()
			if fails != tc.wantFail || st.Failures != tc.wantFail || st.Writes != tc.writes || len(inner.msgs) != tc.wantMsgs || st.MaxConcurrent != 1 {
				t.Fatalf("fails %d stats %+v inner %d; want %d failures, %d writes, %d inner messages",
					fails, st, len(inner.msgs), tc.wantFail, tc.writes, tc.wantMsgs)
			}
		})
	}
	// Cancellation during the delay returns promptly.
	s := &SlowSink{Sink: &memSink{}, Delay: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Write(ctx, msgs(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled write: %v", err)
	}
	if err := (&SlowSink{Sink: &memSink{}, Jitter: time.Millisecond}).Write(context.Background(), msgs(1)); err == nil {
		t.Fatal("jitter without a source should fail")
	}
}

// fakeSource returns batches of n messages from partitions 0..3 in turn.
type fakeSource struct {
	n    int
	next int
}

func (f *fakeSource) ReadBatch(ctx context.Context) (message.Batch, error) {
	if err := ctx.Err(); err != nil {
		return message.Batch{}, err
	}
	var b message.Batch
	for range f.n {
		b.Messages = append(b.Messages, message.Message{Partition: f.next % 4, Offset: int64(f.next)})
		f.next++
	}
	b.Ack = func(context.Context) error { return nil }
	return b, nil
}

func (f *fakeSource) Close() error { return nil }

func (f *fakeSource) Connect(context.Context) error { return nil }

func TestTrackedSource(t *testing.T) {
	gate := make(chan struct{})
	ts := &TrackedSource{Source: &fakeSource{n: 3}, Gate: gate}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	if _, err := ts.ReadBatch(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gated read: %v, want the context's error", err)
	}
	cancel()
	close(gate)
	ctx = context.Background()
	var batches []message.Batch
	for range 4 {
		b, err := ts.ReadBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	for _, b := range batches[:3] {
		if err := b.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := batches[0].Ack(ctx); err != nil { // a repeated ack counts once
		t.Fatal(err)
	}
	st := ts.Stats()
	if st.MaxInFlightBatches != 4 || st.MaxInFlightMessages != 12 || st.InFlightBatches != 1 || st.InFlightMessages != 3 ||
		st.AckedBatches != 3 || st.AckedMessages != 9 || st.PerPartition[0] != 3 || len(st.PerPartition) != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLoadKeyAndTally(t *testing.T) {
	if _, _, _, ok := parseLoadKey([]byte("garbage")); ok {
		t.Fatal("parsed a bad key")
	}
	at := time.Unix(0, 1_700_000_000_123_456_789)
	tal := newTally(2)
	msg := func(seq int64, value string) message.Message {
		return message.Message{Key: []byte(strings.Join([]string{strconv.FormatInt(seq, 10), "10", strconv.FormatInt(at.UnixNano(), 10)}, "/")), Value: []byte(value)}
	}
	now := at.Add(25 * time.Millisecond)
	tal.add(msg(0, "a"), now, true)
	tal.add(msg(1, "b"), now, true)
	tal.add(msg(1, "b"), now, true) // identical redelivery
	tal.add(msg(0, "x"), now, true) // a duplicate that differs
	tal.add(msg(5000, "c"), now, true)
	if tal.records.Load() != 30 || tal.dups != 2 || tal.mismatched != 1 {
		t.Fatalf("records %d dups %d mismatched %d, want 30, 2, 1", tal.records.Load(), tal.dups, tal.mismatched)
	}
	if p := tal.hist.Quantile(0.5); p < 25*time.Millisecond || p > 26*time.Millisecond {
		t.Fatalf("latency median %v, want about 25ms", p)
	}
}

func TestLoadOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		o    LoadOptions
		want string
	}{
		{"ok fixed", LoadOptions{Rate: 100, Duration: time.Second}, ""},
		{"ok max rate", LoadOptions{MaxRate: true, Records: 1000}, ""},
		{"partitions below replicas", LoadOptions{Rate: 100, Duration: time.Second, Replicas: 3, Partitions: 2}, "partitions (2) must be >= replicas (3)"},
		{"no rate", LoadOptions{Duration: time.Second}, "rate must be"},
		{"short", LoadOptions{Rate: 10, Duration: time.Millisecond}, "duration must be >= 1s"},
		{"small backlog", LoadOptions{MaxRate: true, Records: 10}, "records (10) must be >= batch records (100)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			err := o.normalize()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if o.Partitions < 4 || o.Replicas != 1 || o.BatchRecords != 100 {
					t.Fatalf("defaults %+v", o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
