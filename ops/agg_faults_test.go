package ops_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
)

// opsAggConfig adds a km and a weibull aggregator on processing-time
// windows of size, a Kafka ledger (lease session 6 s) and a fit topic to
// opsConfig.
func opsAggConfig(conn kafkaconn.Config, group string, size time.Duration, kmEps, wbEps, budget float64) app.Config {
	cfg := opsConfig(conn, group)
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Output.FitTopic = "ops.fits"
	cfg.Aggregators = []app.AggregatorConfig{
		{Name: "km", Kind: "km", Epsilon: kmEps, Window: app.WindowConfig{Size: size},
			Params: aggregators.KMParams{Method: "noisy-histogram", BinWidth: 1000}},
		{Name: "weibull", Kind: "weibull", Epsilon: wbEps, Window: app.WindowConfig{Size: size},
			Params: aggregators.WeibullParams{BinWidth: 50, IntervalSims: -1, Rungs: 200}}, // intervals: hundreds of mechanism runs per window, not what this tests
	}
	cfg.Ledger = app.LedgerConfig{Topic: "ops.ledger", CheckpointInterval: time.Second,
		LeaseSessionTimeout: 6 * time.Second, Budget: map[string]float64{"stream": budget}}
	return cfg
}

// TestLeaseSessionTimeoutConfig: ledger.lease_session_timeout defaults to
// 10 s and is validated (Kafka brokers refuse sessions under 6 s by
// default; only the Kafka ledger has a lease).
func TestLeaseSessionTimeoutConfig(t *testing.T) {
	base := opsAggConfig(kafkaconn.Config{Brokers: []string{"127.0.0.1:9092"}}, "cfg", time.Hour, 1, 1, 10)
	cases := []struct {
		name string
		edit func(*app.Config)
		want time.Duration
		err  string
	}{
		{"default", func(c *app.Config) { c.Ledger.LeaseSessionTimeout = 0 }, 10 * time.Second, ""},
		{"set", func(c *app.Config) { c.Ledger.LeaseSessionTimeout = 45 * time.Second }, 45 * time.Second, ""},
		{"too short", func(c *app.Config) { c.Ledger.LeaseSessionTimeout = 3 * time.Second }, 0, "ledger.lease_session_timeout: must be between 6s and 5m"},
		{"too long", func(c *app.Config) { c.Ledger.LeaseSessionTimeout = time.Hour }, 0, "ledger.lease_session_timeout: must be between 6s and 5m"},
		{"file ledger", func(c *app.Config) { c.Ledger.Topic, c.Ledger.File = "", "/tmp/l.jsonl" }, 0, "ledger.lease_session_timeout: only with ledger.topic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Ledger.Budget = map[string]float64{"stream": 10}
			tc.edit(&c)
			err := c.Validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.LeaseSessionTimeout(); got != tc.want {
				t.Fatalf("LeaseSessionTimeout() = %v, want %v", got, tc.want)
			}
		})
	}
	y := "kafka: {brokers: [\"127.0.0.1:9092\"]}\ninput: {topic: in}\nschema: {time_max: 10, cohorts: [a]}\nsanitizers: {key_file: k}\n" +
		"output: {sanitized_topic: s, dead_letter_topic: d, fit_topic: f}\n" +
		"aggregators: [{name: km, kind: km, epsilon: 1, window: {size: 1h}}]\n" +
		"ledger: {topic: l, lease_session_timeout: 8s, budget: {stream: 5}}\n"
	c, err := app.ParseConfig([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaseSessionTimeout() != 8*time.Second {
		t.Fatalf("parsed lease_session_timeout %v, want 8s", c.LeaseSessionTimeout())
	}
}

// lostAckBackend persists every append to Memory but reports the first
// failAppends of them as failed: an acknowledgement lost in a broker
// outage. With persist false the failed appends are not persisted.
type lostAckBackend struct {
	ledger.Memory
	failAppends int
	persist     bool
}

func (b *lostAckBackend) Append(ctx context.Context, e ledger.Entry) error {
	if b.failAppends > 0 {
		b.failAppends--
		if b.persist {
			if err := b.Memory.Append(ctx, e); err != nil {
				return err
			}
		}
		return errors.New("write ledger: connection reset before the acknowledgement")
	}
	return b.Memory.Append(ctx, e)
}

// TestLedgerRetryAfterAmbiguousAppend: an append that fails after its entry
// was persisted (a lost acknowledgement, as in a broker restart) must not
// lead the retried release to draw new noise and append a second, different
// entry for the window — that window would be published with one noise and
// re-emitted with the other after the next restart, charged once. The retry
// replays the persisted entry; an append that really failed is drawn anew.
func TestLedgerRetryAfterAmbiguousAppend(t *testing.T) {
	for _, tc := range []struct {
		name        string
		persist     bool
		wantRelease string
		wantReplay  bool
		wantEntries int
	}{
		{"lost acknowledgement", true, `{"draw":1}`, true, 1},
		{"failed append", false, `{"draw":2}`, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := &lostAckBackend{failAppends: 1, persist: tc.persist}
			l, err := ledger.Open(ctx, b, ledger.Options{Budget: map[string]float64{"stream": 10}})
			if err != nil {
				t.Fatal(err)
			}
			draws := 0
			build := func(map[string]float64) ([]byte, error) {
				draws++
				return []byte(fmt.Sprintf(`{"draw":%d}`, draws)), nil
			}
			if _, _, err := l.Release(ctx, "km/0", []string{"stream"}, 1, build); err == nil {
				t.Fatal("the first release did not report the failed append")
			}
			got, replay, err := l.Release(ctx, "km/0", []string{"stream"}, 1, build)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wantRelease || replay != tc.wantReplay {
				t.Fatalf("retry released %s (replay %v), want %s (replay %v)", got, replay, tc.wantRelease, tc.wantReplay)
			}
			if n := len(b.Entries()); n != tc.wantEntries {
				t.Fatalf("%d ledger entries for one window, want %d", n, tc.wantEntries)
			}
			if s := l.Spent("stream"); s != 1 {
				t.Fatalf("spent %v, want 1", s)
			}
			// A restart replays what was published.
			l2, err := ledger.Open(ctx, &b.Memory, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if again, ok := l2.Lookup("km/0"); !ok || string(again) != string(got) {
				t.Fatalf("after a restart the ledger holds %s, published %s", again, got)
			}
		})
	}
}
