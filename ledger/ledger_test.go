package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ledger/kafkaledger"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
)

func TestMain(m *testing.M) { os.Exit(brokertest.RunWithLeakCheck(m)) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, b ledger.Backend, budget map[string]float64) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(testCtx(t), b, ledger.Options{Budget: budget})
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	return l
}

func constant(body string) func(map[string]float64) ([]byte, error) {
	return func(map[string]float64) ([]byte, error) { return []byte(body), nil }
}

func TestReleaseEnforcesEveryScope(t *testing.T) {
	type step struct {
		key     string
		scopes  []string
		eps     float64
		refused string // scope named in the refusal, "" if accepted
	}
	tests := []struct {
		name   string
		budget map[string]float64
		steps  []step
		want   map[string]float64 // remaining after all steps
	}{
		{
			name:   "stream budget refuses the third window and accepts a smaller one",
			budget: map[string]float64{"stream": 1},
			steps: []step{
				{"a/1", []string{"stream", "aggregate:a"}, 0.4, ""},
				{"a/2", []string{"stream", "aggregate:a"}, 0.4, ""},
				{"a/3", []string{"stream", "aggregate:a"}, 0.4, "stream"},
				{"a/4", []string{"stream", "aggregate:a"}, 0.2, ""},
				{"a/5", []string{"stream"}, 0.01, "stream"},
			},
			want: map[string]float64{"stream": 0},
		},
		{
			name:   "cohort scope refuses while stream still has budget",
			budget: map[string]float64{"stream": 10, "cohort:A": 1},
			steps: []step{
				{"k/1", []string{"stream", "cohort:A", "cohort:B"}, 1, ""},
				{"k/2", []string{"stream", "cohort:A", "cohort:B"}, 1, "cohort:A"},
				{"k/3", []string{"stream", "cohort:B"}, 1, ""},
			},
			want: map[string]float64{"stream": 8, "cohort:A": 0},
		},
		{
			name:   "ten charges of 0.1 fit a budget of 1 (rounding slack)",
			budget: map[string]float64{"stream": 1},
			steps: func() []step {
				var s []step
				for i := range 10 {
					s = append(s, step{key: "w/" + string(rune('a'+i)), scopes: []string{"stream"}, eps: 0.1})
				}
				return append(s, step{key: "w/z", scopes: []string{"stream"}, eps: 0.1, refused: "stream"})
			}(),
			want: map[string]float64{"stream": 0},
		},
		{
			name:   "duplicate scopes in one entry are charged once",
			budget: map[string]float64{"stream": 1},
			steps:  []step{{"d/1", []string{"stream", "stream"}, 0.6, ""}},
			want:   map[string]float64{"stream": 0.4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t, &ledger.Memory{}, tc.budget)
			for _, s := range tc.steps {
				called := false
				_, replay, err := l.Release(testCtx(t), s.key, s.scopes, s.eps, func(map[string]float64) ([]byte, error) {
					called = true
					return []byte(`{"ok":true}`), nil
				})
				if s.refused == "" {
					if err != nil || replay || !called {
						t.Fatalf("%s: err %v replay %v called %v, want a fresh release", s.key, err, replay, called)
					}
					continue
				}
				var be *ledger.BudgetError
				if !errors.Is(err, ledger.ErrBudgetExceeded) || !errors.As(err, &be) || be.Scope != s.refused {
					t.Fatalf("%s: err %v, want budget refusal naming %q", s.key, err, s.refused)
				}
				if called {
					t.Fatalf("%s: the release was built (noise drawn) although refused", s.key)
				}
				if _, ok := l.Lookup(s.key); ok {
					t.Fatalf("%s: refused release was stored", s.key)
				}
			}
			for scope, want := range tc.want {
				got, limited := l.Remaining(scope)
				if !limited || math.Abs(got-want) > 1e-9 {
					t.Errorf("remaining %s = %v (limited %v), want %v", scope, got, limited, want)
				}
			}
		})
	}
}

func TestReleaseReportsRemainingToBuilder(t *testing.T) {
	l := open(t, &ledger.Memory{}, map[string]float64{"stream": 2, "cohort:A": 1.5})
	var seen map[string]float64
	_, _, err := l.Release(testCtx(t), "x", []string{"stream", "cohort:A", "aggregate:x"}, 0.5, func(r map[string]float64) ([]byte, error) {
		seen = r
		return []byte(`{}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"stream": 1.5, "cohort:A": 1}
	if len(seen) != len(want) || seen["stream"] != 1.5 || seen["cohort:A"] != 1 {
		t.Fatalf("builder saw remaining %v, want %v (unlimited scopes omitted)", seen, want)
	}
	if r, limited := l.Remaining("aggregate:x"); limited || !math.IsInf(r, 1) {
		t.Fatalf("unbudgeted scope: remaining %v limited %v", r, limited)
	}
	if got := l.Spent("aggregate:x"); got != 0.5 {
		t.Fatalf("spent on unbudgeted scope = %v, want 0.5", got)
	}
}

func TestReleaseRejectsBadInput(t *testing.T) {
	l := open(t, &ledger.Memory{}, nil)
	cases := []struct {
		name   string
		key    string
		scopes []string
		eps    float64
		body   string
	}{
		{"empty key", "", []string{"stream"}, 1, `{}`},
		{"no scope", "k", nil, 1, `{}`},
		{"negative epsilon", "k", []string{"stream"}, -1, `{}`},
		{"infinite epsilon", "k", []string{"stream"}, math.Inf(1), `{}`},
		{"not json", "k", []string{"stream"}, 1, `not json`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := l.Release(testCtx(t), tc.key, tc.scopes, tc.eps, constant(tc.body)); err == nil {
				t.Fatal("accepted")
			}
			if l.Len() != 0 {
				t.Fatal("stored a rejected entry")
			}
		})
	}
	if _, err := ledger.Open(testCtx(t), &ledger.Memory{}, ledger.Options{Budget: map[string]float64{"stream": 0}}); err == nil {
		t.Fatal("zero budget accepted")
	}
}

func TestPersistFailureChargesNothing(t *testing.T) {
	m := &ledger.Memory{FailAppend: errors.New("disk full")}
	l := open(t, m, map[string]float64{"stream": 1})
	if _, _, err := l.Release(testCtx(t), "k", []string{"stream"}, 0.7, constant(`{"v":1}`)); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the persistence error", err)
	}
	if got := l.Spent("stream"); got != 0 {
		t.Fatalf("spent %v after a failed persist", got)
	}
	m.FailAppend = nil
	b, replay, err := l.Release(testCtx(t), "k", []string{"stream"}, 0.7, constant(`{"v":2}`))
	if err != nil || replay || string(b) != `{"v":2}` {
		t.Fatalf("retry: %s %v %v", b, replay, err)
	}
}

// backendCase opens a fresh backend on each call, over the same storage.
type backendCase struct {
	name string
	open func(t *testing.T) ledger.Backend
}

// localBackends are the memory and the file backend.
func localBackends(t *testing.T) []backendCase {
	dir := t.TempDir()
	mem := &ledger.Memory{}
	return []backendCase{
		{"memory", func(t *testing.T) ledger.Backend { return mem }},
		{"file", func(t *testing.T) ledger.Backend {
			b, err := ledger.OpenFile(filepath.Join(dir, "ledger.jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
	}
}

// backends are localBackends and the Kafka backend on a test broker.
func backends(t *testing.T) []backendCase {
	_, conn := brokertest.Start(t, broker.Options{Partitions: 1})
	conn.ClientID = "ledger-test"
	return append(localBackends(t), backendCase{"kafka", func(t *testing.T) ledger.Backend {
		b, err := kafkaledger.Open(testCtx(t), conn, "dpsurv.ledger", nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}})
}

func TestRestartNeitherRefillsNorRenoises(t *testing.T) {
	big := `{"curve":"` + strings.Repeat("0123456789", 70_000) + `"}` // 700 kB: chunked on Kafka
	for _, bc := range backends(t) {
		t.Run(bc.name, func(t *testing.T) {
			budget := map[string]float64{"stream": 1}
			l1 := open(t, bc.open(t), budget)
			// Non-canonical JSON with characters encoding/json escapes: the
			// bytes returned now must equal the bytes replayed later.
			first, replay, err := l1.Release(testCtx(t), "km/100/A", []string{"stream", "cohort:A"}, 0.6,
				constant(`{ "surv": [1, 0.5], "note": "<a&b>" }`))
			if err != nil || replay {
				t.Fatalf("first release: %v %v", err, replay)
			}
			bigOut, _, err := l1.Release(testCtx(t), "km/200/A", []string{"cohort:A"}, 0, constant(big))
			if err != nil {
				t.Fatalf("large release: %v", err)
			}
			if err := l1.Close(); err != nil {
				t.Fatal(err)
			}

			l2 := open(t, bc.open(t), budget)
			t.Cleanup(func() { l2.Close() })
			if got := l2.Spent("stream"); math.Abs(got-0.6) > 1e-12 {
				t.Fatalf("spent after restart = %v, want 0.6", got)
			}
			again, replay, err := l2.Release(testCtx(t), "km/100/A", []string{"stream", "cohort:A"}, 0.6,
				func(map[string]float64) ([]byte, error) {
					t.Fatal("noise function called for a window already released")
					return nil, nil
				})
			if err != nil || !replay {
				t.Fatalf("replay: %v %v", err, replay)
			}
			if !bytes.Equal(first, again) {
				t.Fatalf("replayed bytes differ:\n%s\n%s", first, again)
			}
			if b, ok := l2.Lookup("km/200/A"); !ok || !bytes.Equal(b, bigOut) {
				t.Fatalf("large release not restored intact (%d bytes, ok %v)", len(b), ok)
			}
			if got := l2.Spent("stream"); math.Abs(got-0.6) > 1e-12 {
				t.Fatalf("replay charged again: spent %v", got)
			}
			_, _, err = l2.Release(testCtx(t), "km/300/A", []string{"stream"}, 0.6, constant(`{}`))
			if !errors.Is(err, ledger.ErrBudgetExceeded) {
				t.Fatalf("after restart an over-budget release was not refused: %v", err)
			}
			if _, _, err := l2.Release(testCtx(t), "km/400/A", []string{"stream"}, 0.4, constant(`{}`)); err != nil {
				t.Fatalf("a release within the remaining budget: %v", err)
			}
		})
	}
}

func TestFileTornAndCorruptLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "l.jsonl")
	b, err := ledger.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := open(t, b, nil)
	if _, _, err := l.Release(testCtx(t), "a", []string{"stream"}, 0.5, constant(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	// A torn append is cut off; the complete entry survives.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"key":"b","scopes":["stream"],"epsilon":0.5,"rel`)
	f.Close()
	b2, err := ledger.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2 := open(t, b2, nil)
	if l2.Len() != 1 || l2.Spent("stream") != 0.5 {
		t.Fatalf("after torn line: %d entries, spent %v", l2.Len(), l2.Spent("stream"))
	}
	if _, _, err := l2.Release(testCtx(t), "c", []string{"stream"}, 0.25, constant(`{"c":1}`)); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != 2 || strings.Contains(string(data), `"rel{`) {
		t.Fatalf("file after torn-line repair and append:\n%s", data)
	}

	// A corrupt line in the middle refuses to open (never a silent reset).
	os.WriteFile(path, append([]byte("garbage\n"), data...), 0o600)
	b3, err := ledger.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b3.Close()
	if _, err := ledger.Open(testCtx(t), b3, ledger.Options{}); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("corrupt ledger opened: %v", err)
	}
}

func TestFileIsLockedWhileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.jsonl")
	b, err := ledger.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.OpenFile(path, nil); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("second open: %v, want locked", err)
	}
	b.Close()
	b2, err := ledger.OpenFile(path, nil)
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	b2.Close()
}

func TestBudgetMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := &ledger.Memory{}
	l, err := ledger.Open(testCtx(t), m, ledger.Options{Budget: map[string]float64{"stream": 2}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	l.Release(testCtx(t), "a", []string{"stream"}, 0.5, constant(`{}`))
	l.Release(testCtx(t), "a", []string{"stream"}, 0.5, constant(`{}`))
	l.Release(testCtx(t), "b", []string{"stream"}, 5, constant(`{}`))
	checks := []struct {
		name string
		want float64
	}{
		{"dpsurv_privacy_budget_remaining", 1.5},
		{"dpsurv_privacy_budget_spent", 0.5},
	}
	for _, c := range checks {
		if got := pipelinetest.Metric(reg, c.name, map[string]string{"scope": "stream"}); got != c.want {
			t.Errorf("%s{scope=stream} = %v, want %v", c.name, got, c.want)
		}
	}
	charges, replays, refusals := pipelinetest.Metric(reg, "dpsurv_ledger_charges_total", nil),
		pipelinetest.Metric(reg, "dpsurv_ledger_replays_total", nil), pipelinetest.Metric(reg, "dpsurv_ledger_refusals_total", nil)
	if charges != 1 || replays != 1 || refusals != 1 {
		t.Fatalf("%v charges, %v replays, %v refusals; want one of each", charges, replays, refusals)
	}
}

func TestStateStores(t *testing.T) {
	_, conn := brokertest.Start(t, broker.Options{Partitions: 1})
	conn.ClientID = "state-test"
	dir := t.TempDir()
	stores := []struct {
		name string
		open func(t *testing.T) ledger.StateStore
	}{
		{"file", func(t *testing.T) ledger.StateStore {
			s, err := ledger.OpenFileState(filepath.Join(dir, "state"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"kafka", func(t *testing.T) ledger.StateStore {
			s, err := kafkaledger.OpenState(testCtx(t), conn, "dpsurv.ledger.state", nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	big := bytes.Repeat([]byte("state-"), 200_000) // 1.2 MB: several chunks
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			if got, err := s.Load(testCtx(t)); err != nil || got != nil {
				t.Fatalf("empty store: %q %v", got, err)
			}
			for i, v := range [][]byte{[]byte("one"), big, []byte("three")} {
				if err := s.Save(testCtx(t), v); err != nil {
					t.Fatalf("save %d: %v", i, err)
				}
			}
			s.Close()
			s2 := st.open(t)
			defer s2.Close()
			got, err := s2.Load(testCtx(t))
			if err != nil || string(got) != "three" {
				t.Fatalf("load after reopen: %q %v", got, err)
			}
			if err := s2.Save(testCtx(t), big); err != nil {
				t.Fatal(err)
			}
			s2.Close()
			s3 := st.open(t)
			defer s3.Close()
			got, err = s3.Load(testCtx(t))
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("large snapshot: %d bytes, %v", len(got), err)
			}
		})
	}
}

func TestReopenOnTheSameRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := &ledger.Memory{}
	for i := range 2 {
		l, err := ledger.Open(testCtx(t), m, ledger.Options{Budget: map[string]float64{"stream": 2}, Registerer: reg})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if _, _, err := l.Release(testCtx(t), "k"+string(rune('0'+i)), []string{"stream"}, 0.5, constant(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if got := pipelinetest.Metric(reg, "dpsurv_privacy_budget_remaining", map[string]string{"scope": "stream"}); got != 1 {
		t.Fatalf("remaining after reopen = %v, want 1", got)
	}
}
