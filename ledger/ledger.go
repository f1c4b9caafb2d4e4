package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// ScopeStream is the scope every release of the service is charged to; its
// budget must be configured whenever aggregators run.
const ScopeStream = "stream"

// ScopeAggregate and ScopeCohort name the per-aggregate and per-cohort
// scopes ("aggregate:km-weekly", "cohort:A").
func ScopeAggregate(name string) string { return "aggregate:" + name }

// ScopeCohort names the scope of one public cohort label.
func ScopeCohort(label string) string { return "cohort:" + label }

// ErrBudgetExceeded is returned (wrapped in a *BudgetError) when a charge
// would take a scope past its total budget. Nothing is drawn or stored.
var ErrBudgetExceeded = errors.New("privacy budget exceeded")

// BudgetError names the scope that refused a charge.
type BudgetError struct {
	Key       string
	Scope     string
	Budget    float64
	Spent     float64
	Requested float64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("ledger charge %q: scope %q: %v: spent %g of %g, requested %g",
		e.Key, e.Scope, ErrBudgetExceeded, e.Spent, e.Budget, e.Requested)
}

// Unwrap makes errors.Is(err, ErrBudgetExceeded) hold.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// budgetSlack absorbs float rounding when epsilons are summed (ten charges
// of 0.1 fit a budget of 1).
const budgetSlack = 1e-9

// Entry is one charged release. Release holds the exact bytes that are
// published (JSON); a replay returns them unchanged.
type Entry struct {
	Key     string          `json:"key"`
	Scopes  []string        `json:"scopes"`
	Epsilon float64         `json:"epsilon"`
	Release json.RawMessage `json:"release"`
	// SupersededEpsilon, when above Epsilon, is what the entry is charged
	// if it is NOT the first value of its key: a cumulative window costs 0
	// as post-processing of a tree counter already charged, but a second
	// holder's value of it exposes node noise drawn independently of the
	// first value's, so it is charged at the horizon's epsilon.
	SupersededEpsilon float64 `json:"superseded_epsilon,omitempty"`
}

// supersededCharge is what a second, different value of a key costs.
func (e Entry) supersededCharge() float64 { return math.Max(e.Epsilon, e.SupersededEpsilon) }

func (e Entry) validate() error {
	switch {
	case e.Key == "":
		return errors.New("empty key")
	case !(e.Epsilon >= 0) || math.IsInf(e.Epsilon, 0):
		return fmt.Errorf("epsilon must be finite and >= 0, got %v", e.Epsilon)
	case !(e.SupersededEpsilon >= 0) || math.IsInf(e.SupersededEpsilon, 0):
		return fmt.Errorf("superseded epsilon must be finite and >= 0, got %v", e.SupersededEpsilon)
	case len(e.Scopes) == 0:
		return errors.New("no scope")
	}
	for _, s := range e.Scopes {
		if s == "" {
			return errors.New("empty scope")
		}
	}
	return nil
}

// Backend persists entries. Append must return only once the entry is
// durable; Load returns every durable entry in append order.
type Backend interface {
	Load(ctx context.Context) ([]Entry, error)
	Append(ctx context.Context, e Entry) error
	Close() error
}

// Tailer is implemented by backends whose log can receive a write after
// Append reported failure (a lost acknowledgement, a request still in
// flight) or from a second writer (a former lease holder): Kafka. Tail
// returns the entries persisted since the previous Load or Tail, in log
// order. After every successful Append the ledger reads the log back to
// its end and publishes the FIRST value of the key in log order — which is
// what every reader of the ledger counts — so the fit topic only ever
// carries the counted release, whatever lands late.
type Tailer interface {
	Tail(ctx context.Context) ([]Entry, error)
}

// Options configures a Ledger.
type Options struct {
	// Budget maps a scope to its total epsilon. A scope without an entry
	// is unlimited (the service requires "stream" to be set).
	Budget map[string]float64
	// Registerer receives the budget gauges (optional).
	Registerer prometheus.Registerer
	Log        *zap.Logger
}

// Ledger is the privacy ledger. It is safe for concurrent use; releases are
// serialized.
type Ledger struct {
	mu      sync.Mutex
	backend Backend
	budget  map[string]float64
	spent   map[string]float64
	entries map[string]Entry
	// values holds, per key, the hashes of the distinct release values
	// found in the backend. The first counts and is the only one ever
	// published; each further distinct value (a write that landed after
	// another of its key) is charged too: it is a noisy output stored on
	// the ledger, outside the budget otherwise.
	values map[string]map[[32]byte]bool
	log    *zap.Logger
	// unsure is set by a failed Append, whose entry may have been
	// persisted all the same (a lost acknowledgement): the next Release
	// reloads the backend first.
	unsure bool

	collectors
}

// Open loads every entry of b and returns the ledger. The spent budget is
// recomputed from the entries, so a restart never refills it.
func Open(ctx context.Context, b Backend, opts Options) (*Ledger, error) {
	if b == nil {
		return nil, errors.New("open ledger: nil backend")
	}
	for s, v := range opts.Budget {
		if s == "" {
			return nil, errors.New("open ledger: budget for an empty scope")
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("open ledger: budget of scope %q must be positive and finite, got %v", s, v)
		}
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	l := &Ledger{
		backend:    b,
		budget:     make(map[string]float64, len(opts.Budget)),
		spent:      map[string]float64{},
		entries:    map[string]Entry{},
		values:     map[string]map[[32]byte]bool{},
		log:        log,
		collectors: newCollectors(),
	}
	for s, v := range opts.Budget {
		l.budget[s] = v
	}
	if opts.Registerer != nil {
		// A ledger reopened in the same process (a new aggregator lease)
		// reuses the collectors already registered.
		var err error
		if l.remainingGauge, err = register(opts.Registerer, l.remainingGauge); err == nil {
			if l.spentGauge, err = register(opts.Registerer, l.spentGauge); err == nil {
				if l.charges, err = register(opts.Registerer, l.charges); err == nil {
					if l.replays, err = register(opts.Registerer, l.replays); err == nil {
						if l.refusals, err = register(opts.Registerer, l.refusals); err == nil {
							l.superseded, err = register(opts.Registerer, l.superseded)
						}
					}
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("open ledger: register metrics: %w", err)
		}
	}
	entries, err := b.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	dups, extra := 0, 0
	for _, e := range entries {
		switch l.ingest(e) {
		case ingestRepeat:
			dups++ // a repeated append of the same value
		case ingestSuperseded:
			extra++
		}
	}
	if dups > 0 {
		log.Warn("ledger holds repeated entries; each counts once", zap.Int("repeated", dups))
	}
	if extra > 0 {
		log.Warn("ledger holds second values of counted keys; the first of each is the release, every value is charged", zap.Int("superseded", extra))
	}
	for s := range l.budget {
		l.updateGauges(s)
		l.refusals.WithLabelValues(s) // at 0 from the start
	}
	for s := range l.spent {
		l.updateGauges(s)
	}
	log.Info("ledger opened", zap.Int("entries", len(l.entries)))
	return l, nil
}

// register registers c, or returns the equal collector registered before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old, nil
			}
		}
		return c, err
	}
	return c, nil
}

// ingest results.
const (
	ingestFirst      = iota // the key's first value: the release
	ingestRepeat            // a value already seen: nothing changes
	ingestSuperseded        // a second, different value: charged, never published
)

// ingest takes one entry read from (or written to) the backend, in log
// order: the first value of a key is its release; a repeat of a known
// value is ignored; a different value is charged but never published.
func (l *Ledger) ingest(e Entry) int {
	h := sha256.Sum256(e.Release)
	vals := l.values[e.Key]
	switch {
	case vals == nil:
		l.values[e.Key] = map[[32]byte]bool{h: true}
		l.entries[e.Key] = e
		l.charge(e)
		return ingestFirst
	case vals[h]:
		return ingestRepeat
	}
	vals[h] = true
	l.chargeEps(e.Scopes, e.supersededCharge())
	l.superseded.Inc()
	return ingestSuperseded
}

func (l *Ledger) charge(e Entry) { l.chargeEps(e.Scopes, e.Epsilon) }

func (l *Ledger) chargeEps(scopes []string, eps float64) {
	for _, s := range uniq(scopes) {
		l.spent[s] += eps
	}
}

func (l *Ledger) updateGauges(scope string) {
	l.spentGauge.WithLabelValues(scope).Set(l.spent[scope])
	if b, ok := l.budget[scope]; ok {
		l.remainingGauge.WithLabelValues(scope).Set(math.Max(0, b-l.spent[scope]))
	}
}

func uniq(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

// Release is the only way a release is made: if key is already in the
// ledger it returns the stored bytes (replay = true) without calling build —
// no noise is drawn and nothing is charged. Otherwise it checks every
// scope's remaining budget (a refusal returns a *BudgetError wrapping
// ErrBudgetExceeded, before build is called), calls build with the budget that
// will remain in each budgeted scope after the charge, persists the entry
// durably and only then returns the bytes for publication. build must return
// JSON; it is called with the ledger locked.
func (l *Ledger) Release(ctx context.Context, key string, scopes []string, epsilon float64,
	build func(remaining map[string]float64) ([]byte, error)) (release []byte, replay bool, err error) {
	return l.ReleaseSuperseding(ctx, key, scopes, epsilon, 0, build)
}

// ReleaseSuperseding is Release for an entry that costs epsilon as the
// key's release but supersededEpsilon (when larger) if a fault makes it a
// second, unpublished value of the key (Entry.SupersededEpsilon). The
// budget check is against epsilon: a superseded charge lands after the
// fact and can take a scope past its budget (by at most supersededEpsilon
// per lease fault).
func (l *Ledger) ReleaseSuperseding(ctx context.Context, key string, scopes []string, epsilon, supersededEpsilon float64,
	build func(remaining map[string]float64) ([]byte, error)) (release []byte, replay bool, err error) {
	e := Entry{Key: key, Scopes: uniq(scopes), Epsilon: epsilon, SupersededEpsilon: supersededEpsilon}
	if err := e.validate(); err != nil {
		return nil, false, fmt.Errorf("ledger release %q: %w", key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tailer, tails := l.backend.(Tailer)
	switch {
	case l.unsure:
		if err := l.reload(ctx); err != nil {
			return nil, false, fmt.Errorf("ledger release %q: reload after a failed append: %w", key, err)
		}
	case tails:
		// Read before write: another writer (a former lease holder) may
		// have released this key since we last read; replay it rather
		// than draw a value that could never be published.
		news, err := tailer.Tail(ctx)
		if err != nil {
			l.unsure = true
			return nil, false, fmt.Errorf("ledger release %q: read: %w", key, err)
		}
		l.ingestAll(news)
	}
	if old, ok := l.entries[key]; ok {
		if old.Epsilon != epsilon || !slices.Equal(old.Scopes, e.Scopes) {
			l.log.Warn("ledger replay with a different charge; the stored release stands",
				zap.String("key", key), zap.Float64("stored_epsilon", old.Epsilon), zap.Float64("requested_epsilon", epsilon))
		}
		l.replays.Inc()
		return old.Release, true, nil
	}
	remaining := make(map[string]float64)
	for _, s := range e.Scopes {
		b, limited := l.budget[s]
		if !limited {
			continue
		}
		if l.spent[s]+epsilon > b*(1+budgetSlack)+budgetSlack {
			l.refusals.WithLabelValues(s).Inc()
			return nil, false, &BudgetError{Key: key, Scope: s, Budget: b, Spent: l.spent[s], Requested: epsilon}
		}
		remaining[s] = math.Max(0, b-l.spent[s]-epsilon)
	}
	body, err := build(remaining)
	if err != nil {
		return nil, false, fmt.Errorf("ledger release %q: build release: %w", key, err)
	}
	if !json.Valid(body) {
		return nil, false, fmt.Errorf("ledger release %q: release is not valid JSON", key)
	}
	// Canonical form (compact, HTML-escaped: what encoding/json writes for
	// a RawMessage), so that the bytes published now equal the bytes a
	// replay reads back from any backend.
	canon, err := json.Marshal(json.RawMessage(body))
	if err != nil {
		return nil, false, fmt.Errorf("ledger release %q: %w", key, err)
	}
	e.Release = json.RawMessage(canon)
	if err := l.backend.Append(ctx, e); err != nil {
		l.unsure = true
		return nil, false, fmt.Errorf("ledger release %q: persist: %w", key, err)
	}
	l.charges.Inc()
	if !tails {
		// A backend without late writes (file: one process, synchronous
		// fsync'd appends; memory): the entry just written is the first.
		l.ingest(e)
		for _, s := range e.Scopes {
			l.updateGauges(s)
		}
		return e.Release, false, nil
	}
	// Read the log back to its end: whatever landed before this entry
	// (a failed append that persisted late, a former lease holder's
	// write) is the key's release, and it is what is published.
	news, err := tailer.Tail(ctx)
	if err != nil {
		l.unsure = true
		return nil, false, fmt.Errorf("ledger release %q: read back: %w", key, err)
	}
	l.ingestAll(news)
	first, ok := l.entries[key]
	if !ok || !l.values[key][sha256.Sum256(e.Release)] {
		l.unsure = true
		return nil, false, fmt.Errorf("ledger release %q: read back: the appended entry is not in the log", key)
	}
	if !bytes.Equal(first.Release, e.Release) {
		l.log.Warn("ledger key already held an earlier value; publishing that one", zap.String("key", key))
		return first.Release, true, nil
	}
	return first.Release, false, nil
}

// ingestAll ingests entries in log order and updates the gauges.
func (l *Ledger) ingestAll(entries []Entry) {
	for _, e := range entries {
		if l.ingest(e) == ingestRepeat {
			continue
		}
		for _, s := range e.Scopes {
			l.updateGauges(s)
		}
	}
}

// reload adds the backend's entries this ledger does not hold: an append
// that reported failure but was persisted. Its entry stands (as on Open, the
// first entry of a key counts), so a retried release replays it instead of
// drawing new noise and charging again.
func (l *Ledger) reload(ctx context.Context) error {
	entries, err := l.backend.Load(ctx)
	if err != nil {
		return err
	}
	n := len(l.entries)
	l.ingestAll(entries)
	if len(l.entries) > n {
		l.log.Warn("ledger entries of a failed append or another writer were persisted; they stand", zap.Int("entries", len(l.entries)-n))
	}
	l.unsure = false
	return nil
}

// Charge records e with fixed release bytes (Release with a constant
// builder).
func (l *Ledger) Charge(ctx context.Context, e Entry) (stored []byte, replay bool, err error) {
	return l.Release(ctx, e.Key, e.Scopes, e.Epsilon, func(map[string]float64) ([]byte, error) { return e.Release, nil })
}

// Lookup returns the stored release of key.
func (l *Ledger) Lookup(key string) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[key]
	return e.Release, ok
}

// Admits reports whether a release of epsilon charged to scopes passes the
// budget check now (Release makes the same check when it records one).
func (l *Ledger) Admits(scopes []string, epsilon float64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range scopes {
		if b, limited := l.budget[s]; limited && l.spent[s]+epsilon > b*(1+budgetSlack)+budgetSlack {
			return false
		}
	}
	return true
}

// Remaining returns the epsilon left in scope; limited is false for a
// scope without a budget (remaining is then +Inf).
func (l *Ledger) Remaining(scope string) (remaining float64, limited bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.budget[scope]
	if !ok {
		return math.Inf(1), false
	}
	return math.Max(0, b-l.spent[scope]), true
}

// Spent returns the epsilon charged to scope so far.
func (l *Ledger) Spent(scope string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent[scope]
}

// Len returns the number of entries.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Close closes the backend.
func (l *Ledger) Close() error {
	if err := l.backend.Close(); err != nil {
		return fmt.Errorf("close ledger: %w", err)
	}
	return nil
}

// Memory is a Backend that keeps entries in memory (tests, dry runs). It
// does not survive a restart unless the same value is reopened.
type Memory struct {
	mu      sync.Mutex
	entries []Entry
	// FailAppend, when set, makes Append fail with it (fault injection).
	FailAppend error
}

// Load implements Backend.
func (m *Memory) Load(context.Context) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.entries), nil
}

// Append implements Backend.
func (m *Memory) Append(_ context.Context, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.FailAppend != nil {
		return m.FailAppend
	}
	e.Release = slices.Clone(e.Release)
	m.entries = append(m.entries, e)
	return nil
}

// Close implements Backend.
func (m *Memory) Close() error { return nil }

// Entries returns a copy of the stored entries.
func (m *Memory) Entries() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.entries)
}

// StateStore keeps one opaque snapshot (the aggregators' checkpoint):
// Save replaces it durably, Load returns the last saved one (nil if none).
type StateStore interface {
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, data []byte) error
	Close() error
}

// MemoryState is an in-memory StateStore (tests).
type MemoryState struct {
	mu   sync.Mutex
	data []byte
	// FailSave, when set, makes Save fail with it (fault injection).
	FailSave error
	saves    int
}

// Load implements StateStore.
func (m *MemoryState) Load(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.data), nil
}

// Save implements StateStore.
func (m *MemoryState) Save(_ context.Context, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.FailSave != nil {
		return m.FailSave
	}
	m.data = slices.Clone(data)
	m.saves++
	return nil
}

// Saves returns the number of successful saves.
func (m *MemoryState) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

// Close implements StateStore.
func (m *MemoryState) Close() error { return nil }
