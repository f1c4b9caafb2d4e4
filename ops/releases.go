package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ledger/kafkaledger"
	"github.com/dpsurv/dpsurv/schemas"
)

// ErrReleases marks a violation of the release contract found by
// CheckReleases: a window released twice with different bytes, a fit
// message that differs from the ledger's stored copy, a charge that does
// not add up.
var ErrReleases = errors.New("release check failed")

// KeyValue is one message of a topic as CheckReleases reads it.
type KeyValue struct {
	Key, Value []byte
}

// ReadTopic returns every message of every partition of topic, from each
// partition's first offset to its end as of the call (partition by
// partition, in offset order).
func ReadTopic(ctx context.Context, conn kafkaconn.Config, topic string) ([]KeyValue, error) {
	d, err := conn.Dialer()
	if err != nil {
		return nil, fmt.Errorf("read topic %s: %w", topic, err)
	}
	c, err := d.DialContext(ctx, "tcp", conn.Brokers[0])
	if err != nil {
		return nil, fmt.Errorf("read topic %s: %w", topic, kafkaconn.Classify(err))
	}
	parts, err := c.ReadPartitions(topic)
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("read topic %s: partitions: %w", topic, kafkaconn.Classify(err))
	}
	var out []KeyValue
	for _, p := range parts {
		msgs, err := readPartition(ctx, conn, d, topic, p.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

func readPartition(ctx context.Context, conn kafkaconn.Config, d *kafka.Dialer, topic string, partition int) ([]KeyValue, error) {
	c, err := d.DialLeader(ctx, "tcp", conn.Brokers[0], topic, partition)
	if err != nil {
		return nil, fmt.Errorf("read topic %s[%d]: %w", topic, partition, kafkaconn.Classify(err))
	}
	first, last, err := c.ReadOffsets()
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("read topic %s[%d]: offsets: %w", topic, partition, kafkaconn.Classify(err))
	}
	if last <= first {
		return nil, nil
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: conn.Brokers, Topic: topic, Partition: partition, Dialer: d,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(first); err != nil {
		return nil, fmt.Errorf("read topic %s[%d]: %w", topic, partition, err)
	}
	var out []KeyValue
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read topic %s[%d]: %w", topic, partition, kafkaconn.Classify(err))
		}
		out = append(out, KeyValue{Key: m.Key, Value: m.Value})
		if m.Offset+1 >= last {
			return out, nil
		}
	}
}

// ReadLedger returns every entry of a Kafka ledger topic in append order,
// repeated appends included (kafkaledger.Backend's Load).
func ReadLedger(ctx context.Context, conn kafkaconn.Config, topic string) ([]ledger.Entry, error) {
	b, err := kafkaledger.Open(ctx, conn, topic, zap.NewNop())
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	defer b.Close()
	es, err := b.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return es, nil
}

// GroupLag is the number of messages of topic beyond the offsets group has
// committed (a partition without a commit counts from its first offset).
func GroupLag(ctx context.Context, conn kafkaconn.Config, group, topic string) (int64, error) {
	t, err := conn.Transport()
	if err != nil {
		return 0, fmt.Errorf("group lag: %w", err)
	}
	defer t.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(conn.Brokers...), Transport: t, Timeout: 10 * time.Second}
	meta, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("group lag: %w", kafkaconn.Classify(err))
	}
	var ids []int
	for _, tp := range meta.Topics {
		if tp.Name != topic {
			continue
		}
		if tp.Error != nil {
			return 0, fmt.Errorf("group lag: %w", tp.Error)
		}
		for _, p := range tp.Partitions {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("group lag: topic %s has no partitions", topic)
	}
	var reqs []kafka.OffsetRequest
	for _, id := range ids {
		reqs = append(reqs, kafka.FirstOffsetOf(id), kafka.LastOffsetOf(id))
	}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, fmt.Errorf("group lag: %w", kafkaconn.Classify(err))
	}
	first, last := map[int]int64{}, map[int]int64{}
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return 0, fmt.Errorf("group lag: partition %d: %w", po.Partition, po.Error)
		}
		first[po.Partition], last[po.Partition] = po.FirstOffset, po.LastOffset
	}
	of, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ids}})
	if err != nil {
		return 0, fmt.Errorf("group lag: %w", kafkaconn.Classify(err))
	}
	if of.Error != nil {
		return 0, fmt.Errorf("group lag: %w", of.Error)
	}
	committed := map[int]int64{}
	for _, p := range of.Topics[topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("group lag: partition %d: %w", p.Partition, p.Error)
		}
		committed[p.Partition] = p.CommittedOffset
	}
	var lag int64
	for _, id := range ids {
		c, ok := committed[id]
		if !ok || c < first[id] {
			c = first[id]
		}
		lag += max(0, last[id]-c)
	}
	return lag, nil
}

// ReleaseOptions is what CheckReleases holds the releases to.
type ReleaseOptions struct {
	// Epsilon is each aggregate's per-window epsilon (non-cumulative
	// aggregates only); releases of an aggregate not listed are an error.
	Epsilon map[string]float64
	// Charged is each aggregate's charge per window when it differs from
	// Epsilon (an add/remove-one aggregate of a service that publishes a
	// sanitized topic is charged its replace-one cost, 2 epsilon).
	Charged map[string]float64
	// Cohorts are the public cohort labels: a released window has one
	// fit message per cohort.
	Cohorts []string
	// Pooled lists the aggregates that release one message pooling every
	// cohort (kind discrete: cohort aggregators.DiscreteCohort) instead of
	// one per cohort.
	Pooled map[string]bool
	// StreamBudget is ledger.budget.stream: the k-th distinct ledger entry
	// must report budget_remaining.stream = StreamBudget minus the first k
	// charges, so no charge is missing from the ledger or counted twice.
	StreamBudget float64
	// Complete requires every released window on the fit topic (after a
	// clean stop every released window has been published).
	Complete bool
}

// ReleaseReport summarises the releases CheckReleases accepted.
type ReleaseReport struct {
	// Windows are the released window starts (Unix seconds) of each
	// aggregate, ascending: the distinct ledger keys.
	Windows map[string][]int64
	// FitMessages counts fit-topic releases; FitDuplicates those whose key
	// was seen before (each byte-identical to the first).
	FitMessages, FitDuplicates int
	// Statements counts the per-patient privacy statements on the fit topic
	// (key schemas.PatientStatementKey: one per start of the aggregators'
	// holder and per budget raised by a reload).
	Statements int
	// LedgerRecords counts ledger entries read, LedgerRepeats entries whose
	// key was appended before (each identical to the first).
	LedgerRecords, LedgerRepeats int
	// Spent is the epsilon charged to the stream scope (distinct entries).
	Spent float64
	// N sums the released n of each aggregate over its windows and
	// cohorts (km: the noisy record count; NaN values are skipped).
	N map[string]float64
}

// Released is the number of released windows over all aggregates.
func (r ReleaseReport) Released() int {
	n := 0
	for _, w := range r.Windows {
		n += len(w)
	}
	return n
}

// Elapsed is the number of windows of size from the aggregate's first to
// its last released window (both included): released plus skipped ones.
func (r ReleaseReport) Elapsed(aggregate string, size time.Duration) int {
	w := r.Windows[aggregate]
	if len(w) == 0 || size < time.Second {
		return 0
	}
	return int((w[len(w)-1]-w[0])/int64(size/time.Second)) + 1
}

type storedWindow struct {
	Aggregate       string `json:"aggregate"`
	WindowStartUnix int64  `json:"window_start_unix"`
	Messages        []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	} `json:"messages"`
}

type fitHeader struct {
	Key             string             `json:"key"`
	Aggregate       string             `json:"aggregate"`
	WindowStartUnix int64              `json:"window_start_unix"`
	Cohort          string             `json:"cohort"`
	Cumulative      bool               `json:"cumulative"`
	Epsilon         float64            `json:"epsilon"`
	EpsilonCharged  float64            `json:"epsilon_charged"`
	BudgetRemaining map[string]float64 `json:"budget_remaining"`
	N               *float64           `json:"n"`
}

// CheckReleases checks a fit topic and a ledger against the release
// contract of docs/aggregators.md: every ledger key is
// <aggregate>/<window_start_unix>, charged once (a repeated append must be
// identical) with the aggregate's epsilon to the stream, aggregate and
// every cohort scope; its stored release has one message per cohort, keyed
// <aggregate>/<window_start_unix>/<cohort>; the charges add up
// (budget_remaining.stream after the k-th entry = StreamBudget - the first
// k charges); every fit message belongs to a ledger entry and equals the
// stored bytes, so a key seen twice carries identical bytes; with Complete,
// every stored message was published. A per-patient privacy statement
// (key schemas.PatientStatementKey) is no release: it must carry the
// statement schema and state a central cap no larger than StreamBudget
// (when set), and with Complete a fit topic with releases must hold one. A
// violation wraps ErrReleases.
func CheckReleases(fits []KeyValue, entries []ledger.Entry, opts ReleaseOptions) (ReleaseReport, error) {
	rep := ReleaseReport{Windows: map[string][]int64{}, N: map[string]float64{}, LedgerRecords: len(entries)}
	fail := func(format string, a ...any) (ReleaseReport, error) {
		return rep, fmt.Errorf("%w: %s", ErrReleases, fmt.Sprintf(format, a...))
	}
	stored := map[string][]byte{} // fit key -> stored message bytes
	firstEntry := map[string]ledger.Entry{}
	for _, e := range entries {
		if old, ok := firstEntry[e.Key]; ok {
			if !bytes.Equal(old.Release, e.Release) || old.Epsilon != e.Epsilon || !equalStrings(old.Scopes, e.Scopes) {
				return fail("ledger key %s appended twice with different releases (a window released twice)", e.Key)
			}
			rep.LedgerRepeats++
			continue
		}
		firstEntry[e.Key] = e
		agg, start, err := splitWindowKey(e.Key)
		if err != nil {
			return fail("ledger key %q: %v", e.Key, err)
		}
		eps, ok := opts.Epsilon[agg]
		if !ok {
			return fail("ledger key %s: unknown aggregate %q", e.Key, agg)
		}
		charged := eps
		if c, ok := opts.Charged[agg]; ok {
			charged = c
		}
		if e.Epsilon != charged {
			return fail("ledger key %s charged epsilon %v, want %v", e.Key, e.Epsilon, charged)
		}
		want := []string{ledger.ScopeStream, ledger.ScopeAggregate(agg)}
		for _, c := range opts.Cohorts {
			want = append(want, ledger.ScopeCohort(c))
		}
		sort.Strings(want)
		if !equalStrings(e.Scopes, want) {
			return fail("ledger key %s charged scopes %v, want %v", e.Key, e.Scopes, want)
		}
		rep.Spent += e.Epsilon
		var doc storedWindow
		if err := json.Unmarshal(e.Release, &doc); err != nil {
			return fail("ledger key %s: stored release: %v", e.Key, err)
		}
		if doc.Aggregate != agg || doc.WindowStartUnix != start {
			return fail("ledger key %s stores the release of %s/%d", e.Key, doc.Aggregate, doc.WindowStartUnix)
		}
		labels := opts.Cohorts
		if opts.Pooled[agg] {
			labels = []string{aggregators.DiscreteCohort}
		}
		if len(doc.Messages) != len(labels) {
			return fail("ledger key %s stores %d messages, want one per cohort (%d)", e.Key, len(doc.Messages), len(labels))
		}
		for i, m := range doc.Messages {
			wantKey := e.Key + "/" + labels[i]
			if m.Key != wantKey {
				return fail("ledger key %s: message %d keyed %q, want %q", e.Key, i, m.Key, wantKey)
			}
			var h fitHeader
			if err := json.Unmarshal(m.Value, &h); err != nil {
				return fail("ledger key %s: message %s: %v", e.Key, m.Key, err)
			}
			if h.Key != m.Key || h.Aggregate != agg || h.WindowStartUnix != start || h.Cohort != labels[i] {
				return fail("ledger key %s: message %s describes %s (%s/%d/%s)", e.Key, m.Key, h.Key, h.Aggregate, h.WindowStartUnix, h.Cohort)
			}
			if h.Cumulative || h.EpsilonCharged != charged || h.Epsilon != eps {
				return fail("ledger key %s: message %s says epsilon %v, charged %v (cumulative %v); want %v, charged %v", e.Key, m.Key, h.Epsilon, h.EpsilonCharged, h.Cumulative, eps, charged)
			}
			remaining, ok := h.BudgetRemaining[ledger.ScopeStream]
			if wantRem := math.Max(0, opts.StreamBudget-rep.Spent); !ok || math.Abs(remaining-wantRem) > 1e-9*math.Max(1, opts.StreamBudget) {
				return fail("ledger key %s: budget_remaining.stream = %v after %v charged, want %v (a charge missing from the ledger or counted twice)",
					e.Key, remaining, rep.Spent, wantRem)
			}
			if h.N != nil && !math.IsNaN(*h.N) {
				rep.N[agg] += *h.N
			}
			stored[m.Key] = m.Value
		}
		rep.Windows[agg] = append(rep.Windows[agg], start)
	}
	seen := map[string][]byte{}
	for _, f := range fits {
		if schemas.IsPatientStatementKey(f.Key) {
			if err := checkStatement(f.Value, opts.StreamBudget); err != nil {
				return fail("privacy statement: %v", err)
			}
			rep.Statements++
			continue
		}
		rep.FitMessages++
		k := string(f.Key)
		want, ok := stored[k]
		if !ok {
			return fail("fit message %s has no ledger entry (released without a charge)", k)
		}
		if first, dup := seen[k]; dup {
			if !bytes.Equal(first, f.Value) {
				return fail("fit message %s published twice with different bytes", k)
			}
			rep.FitDuplicates++
			continue
		}
		if !bytes.Equal(f.Value, want) {
			return fail("fit message %s differs from the ledger's stored release", k)
		}
		seen[k] = f.Value
	}
	if opts.Complete {
		for k := range stored {
			if _, ok := seen[k]; !ok {
				return fail("released window message %s never reached the fit topic", k)
			}
		}
	}
	if opts.Complete && len(stored) > 0 && rep.Statements == 0 {
		return fail("no per-patient privacy statement (key %s) on the fit topic beside %d releases", schemas.PatientStatementKey, len(stored))
	}
	for _, w := range rep.Windows {
		sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	}
	return rep, nil
}

func splitWindowKey(key string) (string, int64, error) {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return "", 0, errors.New("want <aggregate>/<window_start_unix>")
	}
	s, err := strconv.ParseInt(key[i+1:], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("window start: %w", err)
	}
	return key[:i], s, nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkStatement checks a privacy statement document: its schema and
// kind, and a central cap within the stream budget (when one is given).
func checkStatement(value []byte, streamBudget float64) error {
	var doc struct {
		Schema    string `json:"schema"`
		Kind      string `json:"kind"`
		Statement struct {
			CentralCap *float64 `json:"central_cap"`
		} `json:"statement"`
	}
	if err := json.Unmarshal(value, &doc); err != nil {
		return err
	}
	if doc.Schema != schemas.PatientStatementSchemaName || doc.Kind != schemas.PatientStatementKind {
		return fmt.Errorf("schema %q, kind %q; want %s, %s", doc.Schema, doc.Kind, schemas.PatientStatementSchemaName, schemas.PatientStatementKind)
	}
	if streamBudget > 0 && (doc.Statement.CentralCap == nil || *doc.Statement.CentralCap > streamBudget+1e-9) {
		return fmt.Errorf("central cap %v, but the stream budget %v binds", doc.Statement.CentralCap, streamBudget)
	}
	return nil
}
