package aggregators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/retry"
)

// maxReleaseAttempts bounds the failed attempts (other than a budget
// refusal) at releasing one window in one process before it is withheld.
const maxReleaseAttempts = 5

// Publisher is where the engine publishes releases (a sinks.Kafka in the
// service): Write returns nil only once every message is durable.
type Publisher interface {
	Write(ctx context.Context, msgs []message.Message) error
}

// EngineConfig wires an Engine.
type EngineConfig struct {
	Aggregates []Config
	// Topic is the input topic; it is recorded in the checkpoint, whose
	// offsets are only valid for it.
	Topic  string
	Ledger *ledger.Ledger
	State  ledger.StateStore
	// Fits receives one JSON message per release (key
	// aggregate/window_start_unix/cohort); CurveFits, when set, the Arrow
	// curve table of each km release under the same key.
	Fits      Publisher
	CurveFits Publisher
	Clock     Clock
	// Noise is the randomness of the releases: dp.NewSecureSource in the
	// service, a seeded source in tests.
	Noise   dp.Source
	Metrics *Metrics
	Log     *zap.Logger
	Mem     memory.Allocator
	// AsyncFits runs the fit of each km, discrete-time and Weibull window
	// (noise draw and estimation; a pSGLD window can take a minute, a
	// Weibull window's noise-aware intervals tens of seconds, a km
	// window's log-rank and band simulations up to seconds under load) on
	// its own goroutine,
	// so that Observe and Tick never wait for it: the fit starts on the
	// Tick that would have released the window, and the first Tick after
	// it ends records it in the ledger and publishes it. Before a fit
	// starts the ledger is consulted (a stored release is replayed, no
	// noise drawn; a budget already spent withholds it unfitted). The fit
	// does not depend on the budget: the budget is checked once, when the
	// ledger records the release, and the release states what remains
	// then (another aggregate's releases while it ran never discard it).
	// A window's release therefore waits only for its own fit (and a fit
	// slot), never for another window's: windows of one aggregate may be
	// published out of order when an earlier one's fit takes longer. A
	// cumulative km window stays inline (its release is post-processing
	// of the tree counter, which steps one window at a time). The service
	// sets it; Noise is then shared with the fits' goroutines (it is
	// wrapped in a lock).
	AsyncFits bool
	// MaxConcurrentFits bounds the asynchronous fits running at once (0:
	// GOMAXPROCS); the others wait, oldest first.
	MaxConcurrentFits int
	// MaxPendingWindows bounds each asynchronous aggregate's closed
	// windows waiting for their fit and release (0:
	// DefaultMaxPendingWindows). A window that closes while its aggregate
	// holds that many is withheld unfitted, charged (WithheldPendingLimit,
	// reason pending_limit). km windows are not bounded by it: each holds
	// only its counts and its fit takes about a second, so they wait out
	// an outage of the ledger or the checkpoint store instead of being
	// withheld.
	MaxPendingWindows int
}

// DefaultMaxPendingWindows is EngineConfig.MaxPendingWindows' default.
const DefaultMaxPendingWindows = 32

// fitJob is a window fit running on its own goroutine (AsyncFits).
type fitJob struct {
	done chan struct{}
	msgs []FitMessage // the release without its budget statement
	err  error
}

// lockedSource serialises a source shared by the engine and its fits.
type lockedSource struct {
	mu  sync.Mutex
	src dp.Source
}

func (l *lockedSource) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Uint64()
}

// Engine runs the configured aggregates over a stream of validated
// records. It is not safe for concurrent use: one goroutine calls Observe,
// Tick and Checkpoint.
//
// Lifecycle of a window: registered (open, by the clock) -> counting ->
// closing (its end + lateness passed; counts final) -> checkpoint saved ->
// released through the ledger (noise drawn only if the ledger has no entry
// for it) -> published to the fit topic. Because a window's counts are in a
// saved checkpoint before its noise is drawn, and the ledger is consulted
// before any draw, a crash at any point re-emits the stored release
// instead of drawing a new one, and no record is counted twice: the
// checkpoint records the input offsets its counts cover, and Skip tells the
// caller to drop redelivered messages below them.
type Engine struct {
	cfg         EngineConfig
	aggs        []*aggregate
	offsets     map[int]int64
	unpublished []string
	dirty       bool // closing windows not yet in a saved checkpoint
	patientKey  []byte
	log         *zap.Logger
	m           *Metrics
	noise       dp.Source
	jobs        map[*closing]*fitJob
}

// NewEngine validates the aggregates and restores the last checkpoint.
func NewEngine(ctx context.Context, cfg EngineConfig) (*Engine, error) {
	var errs []error
	if cfg.Ledger == nil {
		errs = append(errs, errors.New("nil ledger"))
	}
	if cfg.State == nil {
		errs = append(errs, errors.New("nil state store"))
	}
	if cfg.Fits == nil {
		errs = append(errs, errors.New("nil fit sink"))
	}
	if cfg.Noise == nil {
		errs = append(errs, errors.New("nil noise source"))
	}
	if len(cfg.Aggregates) == 0 {
		errs = append(errs, errors.New("no aggregates"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new aggregator engine: %w", err)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Mem == nil {
		cfg.Mem = memory.DefaultAllocator
	}
	if cfg.MaxConcurrentFits <= 0 {
		cfg.MaxConcurrentFits = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxPendingWindows <= 0 {
		cfg.MaxPendingWindows = DefaultMaxPendingWindows
	}
	e := &Engine{cfg: cfg, offsets: map[int]int64{}, log: cfg.Log, m: cfg.Metrics, noise: cfg.Noise, jobs: map[*closing]*fitJob{}}
	if cfg.AsyncFits {
		e.noise = &lockedSource{src: cfg.Noise}
	}
	names := map[string]bool{}
	for _, ac := range cfg.Aggregates {
		if names[ac.Name] {
			return nil, fmt.Errorf("new aggregator engine: duplicate aggregate %q", ac.Name)
		}
		names[ac.Name] = true
		a, err := newAggregate(ac)
		if err != nil {
			return nil, fmt.Errorf("new aggregator engine: %w", err)
		}
		e.aggs = append(e.aggs, a)
	}
	if err := e.restore(ctx); err != nil {
		return nil, fmt.Errorf("new aggregator engine: %w", err)
	}
	if e.patientKey == nil {
		e.patientKey = newPatientKey()
	}
	for _, a := range e.aggs {
		if err := a.setPatientKey(e.patientKey); err != nil {
			return nil, fmt.Errorf("new aggregator engine: %w", err)
		}
	}
	e.updateGauges()
	return e, nil
}

func (e *Engine) restore(ctx context.Context) error {
	b, err := e.cfg.State.Load(ctx)
	if err != nil {
		return err
	}
	if b == nil {
		e.log.Info("aggregators start without a checkpoint")
		return nil
	}
	s, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	if s.Topic != e.cfg.Topic {
		return fmt.Errorf("the checkpoint is for input topic %q, not %q", s.Topic, e.cfg.Topic)
	}
	if e.offsets, err = offsetsFromJSON(s.Offsets); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if len(s.PatientKey) > 0 {
		if len(s.PatientKey) != PatientKeyBytes {
			return fmt.Errorf("checkpoint: patient key of %d bytes", len(s.PatientKey))
		}
		e.patientKey = s.PatientKey
	}
	for _, a := range e.aggs {
		as, ok := s.Aggregates[a.cfg.Name]
		if !ok {
			continue // a new aggregate
		}
		if err := a.restore(as); err != nil {
			return err
		}
	}
	for name := range s.Aggregates {
		if !e.has(name) {
			e.log.Warn("checkpoint holds an aggregate no longer configured; its open windows are dropped", zap.String("aggregate", name))
		}
	}
	e.unpublished = append(e.unpublished, s.Unpublished...)
	e.log.Info("aggregators restored from checkpoint", zap.Int("partitions", len(e.offsets)),
		zap.Int("unpublished", len(e.unpublished)))
	return nil
}

func (e *Engine) has(name string) bool {
	for _, a := range e.aggs {
		if a.cfg.Name == name {
			return true
		}
	}
	return false
}

// Skip reports whether the message at (partition, offset) is already
// counted in the restored checkpoint (a redelivery after a crash).
func (e *Engine) Skip(partition int, offset int64) bool {
	next, ok := e.offsets[partition]
	return ok && offset < next
}

// Observe counts the rows of one input message's validated record (nil or
// empty when it had no good rows) and advances the partition's position.
// Messages below the checkpoint's position are ignored.
func (e *Engine) Observe(partition int, offset int64, rec arrow.Record) error {
	if e.Skip(partition, offset) {
		e.m.Redelivered.Inc()
		return nil
	}
	if rec != nil && rec.NumRows() > 0 {
		now := e.cfg.Clock.Now().UnixNano()
		for _, a := range e.aggs {
			st, err := a.add(rec, now)
			if err != nil {
				return fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
			}
			name := a.cfg.Name
			if st.Counted > 0 {
				e.m.Records.WithLabelValues(name).Add(float64(st.Counted))
			}
			if v := st.Replaced + st.Repeated; v > 0 {
				e.m.Versions.WithLabelValues(name).Add(float64(v))
			}
			if st.Late > 0 {
				e.m.Late.WithLabelValues(name).Add(float64(st.Late))
			}
			if st.Clamped > 0 {
				e.m.Clamped.WithLabelValues(name).Add(float64(st.Clamped))
			}
			if st.CensoredAtHorizon > 0 {
				e.m.CensoredAtHorizon.WithLabelValues(name).Add(float64(st.CensoredAtHorizon))
			}
			for r, n := range st.Skipped {
				e.m.Skipped.WithLabelValues(name, r).Add(float64(n))
			}
		}
	}
	e.offsets[partition] = offset + 1
	return nil
}

// Tick registers the windows the clock opens, closes the windows that are
// due, saves a checkpoint when any closed (before any noise is drawn for
// them), releases closing windows through the ledger and publishes released
// ones. saved reports whether a checkpoint was saved (the caller may then
// commit the input offsets). An error means the checkpoint could not be
// saved; nothing was released and the next Tick retries.
func (e *Engine) Tick(ctx context.Context) (saved bool, err error) {
	t0 := time.Now()
	defer func() { e.m.TickSeconds.Observe(time.Since(t0).Seconds()) }()
	now := e.cfg.Clock.Now().UnixNano()
	for _, a := range e.aggs {
		a.register(now)
		e.closeDue(ctx, a, now)
	}
	if e.dirty {
		if err := e.Checkpoint(ctx); err != nil {
			e.updateGauges()
			return false, err
		}
		saved = true
	}
	e.releaseClosing(ctx)
	e.publish(ctx)
	e.updateGauges()
	return saved, nil
}

func (e *Engine) closeDue(ctx context.Context, a *aggregate, now int64) {
	p := a.plan
	for _, s := range a.due(now) {
		startUnix := time.Unix(0, s).Unix()
		if p.serial && len(a.closing) > 0 {
			return // one step at a time: each release needs its own prefix
		}
		if a.foreign {
			a.drop(s)
			e.dirty = true
			e.withhold(a, startUnix, ReasonCumulativeForeign, nil)
			continue
		}
		if a.capped[s] {
			// A patient bound bound: one patient could displace another
			// (two cells, a 2ε loss for an ε release). Withheld before any
			// charge or noise; a cumulative tree is not stepped with it.
			a.drop(s)
			e.dirty = true
			e.withhold(a, startUnix, ReasonMaxPatients, nil)
			continue
		}
		// The plan's one charge comes before any window noise.
		if p.charge != "" {
			charge := p.charge
			if hk, ok := a.kind.(horizonKeyer); ok {
				var restarted bool
				charge, restarted = hk.horizonKey(a, func(k string) bool { _, ok := e.cfg.Ledger.Lookup(k); return ok })
				if restarted {
					e.dirty = true
					e.m.HorizonsRestarted.WithLabelValues(a.cfg.Name).Inc()
					e.log.Warn("cumulative aggregate starts a new horizon, charged anew: the ledger holds an earlier horizon's charge but its state is lost",
						zap.String("aggregate", a.cfg.Name), zap.String("charge", charge))
				}
			}
			if _, ok := e.cfg.Ledger.Lookup(charge); !ok {
				_, _, err := e.cfg.Ledger.Release(ctx, charge, a.scopes(), a.cfg.ChargedEpsilon(), p.chargeDoc)
				if err != nil && !errors.Is(err, ledger.ErrBudgetExceeded) {
					e.log.Warn("ledger charge failed; retrying", zap.String("aggregate", a.cfg.Name), zap.Error(err))
					return
				}
				if err != nil {
					a.drop(s)
					e.dirty = true
					e.withhold(a, startUnix, ReasonBudgetExceeded, err)
					continue
				}
			}
		}
		if a.counter == nil && a.plan.async && !a.plan.unbounded && e.cfg.AsyncFits && a.pending() >= e.cfg.MaxPendingWindows {
			// Fits slower than the windows: this one is withheld unfitted
			// (and charged, in releaseClosing) rather than queued.
			a.drop(s)
			e.dirty = true
			a.closing = append(a.closing, &closing{start: s, withhold: WithheldPendingLimit})
			continue
		}
		c, err := a.closeWindow(s, e.noise)
		e.dirty = true
		switch {
		case errors.Is(err, errHorizon):
			e.withhold(a, startUnix, ReasonHorizonReached, err)
			continue
		case err != nil:
			e.withhold(a, startUnix, ReasonError, err)
			continue
		}
		a.closing = append(a.closing, c)
		if p.serial {
			return
		}
	}
}

func (e *Engine) withhold(a *aggregate, startUnix int64, reason string, err error) {
	e.m.Withheld.WithLabelValues(a.cfg.Name, reason).Inc()
	fields := []zap.Field{zap.String("aggregate", a.cfg.Name), zap.Int64("window_start_unix", startUnix), zap.String("reason", reason)}
	var be *ledger.BudgetError
	if errors.As(err, &be) {
		fields = append(fields, zap.String("scope", be.Scope), zap.Float64("spent", be.Spent), zap.Float64("budget", be.Budget))
	} else if err != nil {
		fields = append(fields, zap.Error(err))
	}
	e.log.Warn("release withheld", fields...)
}

func (e *Engine) releaseClosing(ctx context.Context) {
	if e.dirty {
		return // their counts are not in a saved checkpoint yet
	}
	for _, a := range e.aggs {
		kept := a.closing[:0]
		for _, c := range a.closing {
			startUnix := time.Unix(0, c.start).Unix()
			key := WindowKey(a.cfg.Name, startUnix)
			eps := a.plan.epsilon
			var replay bool
			var err error
			if c.withhold != "" {
				_, replay, err = e.cfg.Ledger.Release(ctx, key, a.scopes(), eps, func(map[string]float64) ([]byte, error) {
					return a.withheldDoc(c, c.withhold)
				})
			} else if e.cfg.AsyncFits && a.plan.async {
				var ready bool
				ready, replay, err = e.releaseAsync(ctx, a, c, key, eps)
				if !ready {
					kept = append(kept, c)
					continue
				}
			} else {
				var stored []byte
				stored, replay, err = e.cfg.Ledger.ReleaseSuperseding(ctx, key, a.scopes(), eps, a.plan.superseded, func(rem map[string]float64) ([]byte, error) {
					t0 := time.Now()
					defer func() { e.m.FitSeconds.WithLabelValues(a.cfg.Name).Observe(time.Since(t0).Seconds()) }()
					return a.buildWindow(c, e.noise, rem)
				})
				if err == nil && replay && c.draw != "" {
					// A counter step's release stored with another draw is
					// another holder's counter state.
					if d, derr := decodeDoc(stored); derr == nil && d.Draw != "" && d.Draw != c.draw {
						a.foreign, e.dirty = true, true
						e.log.Warn("window released by another holder's counter state; withholding the aggregate's later windows",
							zap.String("key", key))
					}
				}
			}
			switch {
			case err == nil:
				e.unpublished = append(e.unpublished, key)
				if c.buildErr != nil {
					e.withhold(a, startUnix, ReasonError, fmt.Errorf("%s: %w", WithheldBuildFailed, c.buildErr))
				} else if c.withhold != "" && !replay {
					e.withhold(a, startUnix, ReasonPendingLimit, errors.New(c.withhold))
				} else if replay {
					e.m.Replayed.WithLabelValues(a.cfg.Name).Inc()
					e.log.Info("window re-emitted from the ledger", zap.String("key", key))
				} else {
					e.m.Releases.WithLabelValues(a.cfg.Name).Inc()
					e.log.Info("window released", zap.String("key", key), zap.Float64("epsilon", eps))
				}
			case errors.Is(err, ledger.ErrBudgetExceeded):
				e.withhold(a, startUnix, ReasonBudgetExceeded, err)
			default:
				c.fails++
				if c.fails >= maxReleaseAttempts {
					e.withhold(a, startUnix, ReasonError, err)
					continue
				}
				e.log.Warn("window release failed; retrying", zap.String("key", key), zap.Int("attempt", c.fails), zap.Error(err))
				kept = append(kept, c)
			}
		}
		clear(a.closing[len(kept):])
		a.closing = kept
	}
}

// releaseAsync advances the asynchronous release of closing window c:
// ready is false while its fit waits for a slot or runs; otherwise replay
// and err are Ledger.Release's. The fit is drawn once: the budget is
// checked when the ledger records it, which states what remains then.
func (e *Engine) releaseAsync(ctx context.Context, a *aggregate, c *closing, key string, eps float64) (ready, replay bool, err error) {
	job := e.jobs[c]
	if job == nil {
		if _, ok := e.cfg.Ledger.Lookup(key); ok || !e.cfg.Ledger.Admits(a.scopes(), eps) {
			// A stored release is replayed (no fit, no noise); a budget
			// already spent is refused by the ledger before any fit.
			_, replay, err = e.cfg.Ledger.Release(ctx, key, a.scopes(), eps, func(map[string]float64) ([]byte, error) {
				return nil, errors.New("stored release vanished")
			})
			return true, replay, err
		}
		if len(e.jobs) >= e.cfg.MaxConcurrentFits {
			return false, false, nil // waits for a slot
		}
		job = &fitJob{done: make(chan struct{})}
		e.jobs[c] = job
		e.m.FitsRunning.Set(float64(len(e.jobs)))
		go func() {
			defer close(job.done)
			t0 := time.Now()
			job.msgs, job.err = a.fitWindow(c, e.noise)
			e.m.FitSeconds.WithLabelValues(a.cfg.Name).Observe(time.Since(t0).Seconds())
		}()
		return false, false, nil
	}
	select {
	case <-job.done:
	default:
		return false, false, nil
	}
	delete(e.jobs, c)
	e.m.FitsRunning.Set(float64(len(e.jobs)))
	if job.err != nil && a.counter != nil {
		return true, false, job.err
	}
	_, replay, err = e.cfg.Ledger.Release(ctx, key, a.scopes(), eps, func(rem map[string]float64) ([]byte, error) {
		return a.encodeWindow(c, job.msgs, job.err, rem)
	})
	return true, replay, err
}

// WaitFits waits until the asynchronous fits running now have ended (or
// ctx ends); the next Tick records and publishes them.
func (e *Engine) WaitFits(ctx context.Context) error {
	for _, job := range e.jobs {
		select {
		case <-job.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Drain publishes the windows released but not yet published (a clean
// stop): every charged window reaches the fit topic before the process
// stops, retrying a failed write until ctx ends. What it cannot publish
// stays in the checkpoint (Checkpoint, after Drain), and the next holder
// publishes it on its first Tick. It starts no fit and draws no noise.
func (e *Engine) Drain(ctx context.Context) error {
	bo := retry.New(100*time.Millisecond, time.Second)
	for {
		e.settleUncertain(ctx)
		e.publish(ctx)
		e.updateGauges()
		if len(e.unpublished) == 0 {
			return nil
		}
		if !bo.Wait(ctx) {
			return fmt.Errorf("drain: %d released windows not published (left in the checkpoint for the next holder): %w", len(e.unpublished), ctx.Err())
		}
	}
}

// errNoBuildAtShutdown refuses to build a release while draining: the
// drain settles what was charged, it charges nothing new.
var errNoBuildAtShutdown = errors.New("not built while draining")

// settleUncertain asks the ledger about every closing window whose release
// attempt failed: a failure after the append (its read-back cut short by
// the stop, say) leaves the window charged but not known here as released.
// A stored release is replayed into the windows to publish; a window the
// ledger does not hold stays closing (in the final checkpoint, for the next
// holder), since nothing new is built or charged at shutdown.
func (e *Engine) settleUncertain(ctx context.Context) {
	for _, a := range e.aggs {
		kept := a.closing[:0]
		for _, c := range a.closing {
			if c.fails == 0 {
				kept = append(kept, c)
				continue
			}
			key := WindowKey(a.cfg.Name, time.Unix(0, c.start).Unix())
			_, replay, err := e.cfg.Ledger.Release(ctx, key, a.scopes(), a.plan.epsilon, func(map[string]float64) ([]byte, error) {
				return nil, errNoBuildAtShutdown
			})
			if err != nil || !replay {
				kept = append(kept, c)
				continue
			}
			e.m.Replayed.WithLabelValues(a.cfg.Name).Inc()
			e.log.Info("window charged before the stop found in the ledger; publishing it", zap.String("key", key))
			e.unpublished = append(e.unpublished, key)
		}
		clear(a.closing[len(kept):])
		a.closing = kept
	}
}

// publish writes released windows to the fit topic(s), oldest first; a
// failed write is retried on the next Tick (a repeated message carries
// identical bytes).
func (e *Engine) publish(ctx context.Context) {
	for len(e.unpublished) > 0 {
		key := e.unpublished[0]
		b, ok := e.cfg.Ledger.Lookup(key)
		if !ok {
			e.log.Error("released window missing from the ledger; not published", zap.String("key", key))
			e.unpublished = e.unpublished[1:]
			continue
		}
		msgs, curves, err := e.messages(b)
		if err != nil {
			e.log.Error("stored release unreadable; not published", zap.String("key", key), zap.Error(err))
			e.unpublished = e.unpublished[1:]
			continue
		}
		if err := e.cfg.Fits.Write(ctx, msgs); err != nil {
			e.log.Warn("fit topic write failed; retrying", zap.String("key", key), zap.Error(err))
			return
		}
		if e.cfg.CurveFits != nil && len(curves) > 0 {
			if err := e.cfg.CurveFits.Write(ctx, curves); err != nil {
				e.log.Warn("curve topic write failed; retrying", zap.String("key", key), zap.Error(err))
				return
			}
		}
		doc, _ := decodeDoc(b)
		e.m.Published.WithLabelValues(doc.Aggregate).Add(float64(len(msgs)))
		e.observeDelay(doc)
		e.unpublished = e.unpublished[1:]
	}
}

// observeDelay records the time from the close of doc's window (its end +
// lateness) to now, when its fit messages were published.
func (e *Engine) observeDelay(doc windowDoc) {
	if len(doc.Messages) == 0 {
		return // withheld: nothing published
	}
	for _, a := range e.aggs {
		if a.cfg.Name != doc.Aggregate {
			continue
		}
		closed := time.Unix(doc.WindowStartUnix, 0).Add(time.Duration(a.size + a.late))
		e.m.ReleaseDelay.WithLabelValues(a.cfg.Name).Observe(max(0, e.cfg.Clock.Now().Sub(closed).Seconds()))
	}
}

// messages turns a stored window release into fit-topic messages (and
// Arrow curve messages): a pure function of the stored bytes.
func (e *Engine) messages(stored []byte) (msgs, curves []message.Message, err error) {
	doc, err := decodeDoc(stored)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range doc.Messages {
		msgs = append(msgs, message.Message{Key: []byte(m.Key), Value: m.Value})
		if e.cfg.CurveFits == nil {
			continue
		}
		t, err := CurveTable(m.Value, e.cfg.Mem)
		if err != nil {
			return nil, nil, err
		}
		if t != nil {
			curves = append(curves, message.Message{Key: []byte(m.Key), Value: t})
		}
	}
	return msgs, curves, nil
}

// Checkpoint saves the state: input positions, open and closing windows,
// tree counters, unpublished keys.
func (e *Engine) Checkpoint(ctx context.Context) error {
	s := snapshot{Version: snapshotVersion, Topic: e.cfg.Topic, Offsets: offsetsToJSON(e.offsets), PatientKey: e.patientKey,
		Aggregates: map[string]*aggSnapshot{}, Unpublished: append([]string{}, e.unpublished...)}
	for _, a := range e.aggs {
		as, err := a.snapshot()
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		s.Aggregates[a.cfg.Name] = as
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := e.cfg.State.Save(ctx, b); err != nil {
		e.m.CheckpointErrors.Inc()
		return fmt.Errorf("checkpoint: %w", err)
	}
	e.dirty = false
	e.m.Checkpoints.Inc()
	return nil
}

func (e *Engine) updateGauges() {
	total := 0
	unpub := map[string]int{}
	for _, k := range e.unpublished {
		if i := strings.LastIndexByte(k, '/'); i > 0 {
			unpub[k[:i]]++
		}
	}
	for _, a := range e.aggs {
		e.m.OpenWindows.WithLabelValues(a.cfg.Name).Set(float64(len(a.open)))
		e.m.PendingWindows.WithLabelValues(a.cfg.Name).Set(float64(len(a.closing) + unpub[a.cfg.Name]))
		total += a.memoryBytes()
	}
	e.m.StateBytes.Set(float64(total))
	e.m.FitsRunning.Set(float64(len(e.jobs)))
}

// StateBytes returns the bytes of counts the aggregates hold.
func (e *Engine) StateBytes() int {
	n := 0
	for _, a := range e.aggs {
		n += a.memoryBytes()
	}
	return n
}

// Pending returns the windows closed but not yet released, plus those
// released but not yet published.
func (e *Engine) Pending() int {
	n := len(e.unpublished)
	for _, a := range e.aggs {
		n += len(a.closing)
	}
	return n
}

// OpenWindows returns each aggregate's open window starts (tests, debug).
func (e *Engine) OpenWindows() map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, a := range e.aggs {
		var ts []time.Time
		for s := range a.open {
			ts = append(ts, time.Unix(0, s).UTC())
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		out[a.cfg.Name] = ts
	}
	return out
}
