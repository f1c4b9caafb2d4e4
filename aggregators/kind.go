package aggregators

import (
	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/dp"
)

// kind is what differs between aggregate kinds: one type per kind, one
// file per kind (km.go, cumulative.go, weibull.go, discrete.go). The
// engine and the aggregate never ask which kind they hold: they call these
// methods and the optional capabilities below, each looked up once when
// the aggregate is built (newAggregate). A new kind implements kind, has
// its own typed Params (its params method decodes its keys, paramsOf
// reads them back) and is returned by kindOf.
type kind interface {
	// params reads the kind's keys of a YAML params mapping into its typed
	// params (DecodeParams), each with its type; with no entries, the
	// kind's zero params.
	params(d *paramDecoder) Params
	// defaults fills the kind's params defaults (the window's are set);
	// check validates them after defaults, each error a *FieldError
	// relative to the aggregate.
	defaults(c *Config)
	check(c Config) []error
	// open returns the empty state of a new window.
	open(a *aggregate) window
	// add counts the rows of a canonical record into their open windows
	// (a.register has run).
	add(a *aggregate, rec arrow.Record, now int64) (AddStats, error)
	// restore reads back a window's state from its checkpoint
	// (window.snapshot).
	restore(a *aggregate, cells, records []byte) (window, error)
	// release draws closing window c's fit messages: the only place noise
	// is drawn for a window (a counter kind's node noise is drawn when the
	// window is stepped into the counter, counter.step).
	release(a *aggregate, c *closing, src dp.Source, remaining map[string]float64) ([]FitMessage, error)
}

// window is one window's state, open or closing: a histogram (histWindow)
// or a discrete window's records (*discreteWindow).
type window interface {
	// snapshot encodes the state for the checkpoint (kind.restore reads
	// it back): cells always non-nil, records nil when the kind keeps none.
	snapshot() (cells, records []byte)
	// bytes is the memory the state holds.
	bytes() int
}

// exactCounter is implemented by kinds that may treat their window's
// record count as public and release it exactly (n public, replace-one).
type exactCounter interface {
	exactCount(c Config) bool
}

// planner is implemented by kinds whose windows are not released the
// default way (windowPlan).
type planner interface {
	plan(a *aggregate) plan
}

// counter is implemented by kinds whose state outlives the windows
// (cumulative km: a binary-tree counter and the horizon's patients). A
// closing window is stepped into the counter and keeps no state of its
// own; the counter has its own part of the checkpoint.
type counter interface {
	// init sets up the counter of a new aggregate.
	init(a *aggregate) error
	// step feeds window s's state into the counter (drawing that node's
	// noise) and returns the closing window; the aggregate's plan charge
	// has been made.
	step(a *aggregate, s int64, w window, src dp.Source) (*closing, error)
	// save and load are the counter's part of the checkpoint; load runs
	// after the windows are restored.
	save(a *aggregate, s *aggSnapshot) error
	load(a *aggregate, s *aggSnapshot) error
	// bytes is the memory the counter holds.
	bytes(a *aggregate) int
}

// horizonKeyer is implemented by kinds whose plan charge is keyed by an
// epoch the ledger decides (cumulative km: a horizon whose state was lost
// is charged anew under the next epoch, cumulativeKind.horizonKey).
type horizonKeyer interface {
	horizonKey(a *aggregate, charged func(key string) bool) (key string, restarted bool)
}

// plan is how the engine releases an aggregate's closing windows.
type plan struct {
	// epsilon is charged to each window's ledger key; superseded is what
	// the key costs if a fault makes the release a second value of it
	// (ledger.ReleaseSuperseding).
	epsilon, superseded float64
	// serial: one window closing at a time (each release needs the
	// counter at its own step).
	serial bool
	// async: the fit may run on its own goroutine (EngineConfig.AsyncFits).
	async bool
	// unbounded: the closed windows are not bounded by
	// EngineConfig.MaxPendingWindows (km: a window holds only its counts
	// and its fit takes about a second, so its windows wait out an outage
	// of the ledger or the checkpoint store instead of being withheld).
	unbounded bool
	// charge, when set, is the ledger key of a one-time charge of epsilon
	// made before any window is closed (a cumulative horizon's), and
	// chargeDoc builds its ledger document.
	charge    string
	chargeDoc func(remaining map[string]float64) ([]byte, error)
}

// windowPlan is the default plan: each window charged epsilon, inline.
func windowPlan(a *aggregate) plan { return plan{epsilon: a.cfg.ChargedEpsilon()} }

// kindOf returns the kind of c: km (cumulative when c.Window.Cumulative),
// weibull, discrete, or otherKind for a kind that does not exist (Check
// reports it). Kinds hold state (a histogram kind its add cache, a
// cumulative kind its counter): each call returns a new one.
func kindOf(c Config) kind {
	switch c.Kind {
	case KindKM:
		if c.Window.Cumulative {
			return &cumulativeKind{kmKind: kmKind{newHistKind()}}
		}
		return kmKind{newHistKind()}
	case KindWeibull:
		return weibullKind{newHistKind()}
	case KindDiscrete:
		return discreteKind{}
	}
	return otherKind{newHistKind()}
}

// kindNames lists the kinds of kindOf for error messages.
const kindNames = "km, weibull or discrete"

// knownKind reports whether name is an aggregate kind (kindOf lists them).
func knownKind(name string) bool {
	_, other := kindOf(Config{Kind: name}).(otherKind)
	return !other
}

// ReleasesExactCount reports whether the aggregate treats its window's
// record count as public and releases it exactly (n public, replace-one):
// kind discrete, and weibull with method saa.
func (c Config) ReleasesExactCount() bool {
	c, _ = c.Resolved()
	e, ok := kindOf(c).(exactCounter)
	return ok && e.exactCount(c)
}

// otherKind stands for a kind that does not exist: Check reports the kind
// (and a bad bin width, as for the histogram kinds); nothing is released.
type otherKind struct{ histKind }

// otherParams are the params an unknown kind reads: bin_width and method,
// so that the kind's error is the one Check reports rather than the keys'.
type otherParams struct {
	BinWidth float64
	Method   string
}

func (p otherParams) flat() flatParams  { return flatParams{BinWidth: p.BinWidth, Method: p.Method} }
func (p otherParams) binWidth() float64 { return p.BinWidth }

func (otherKind) defaults(c *Config) {
	p := paramsOf[otherParams](*c)
	if p.BinWidth == 0 {
		p.BinWidth = 1
	}
	c.Params = p
}

func (otherKind) params(d *paramDecoder) Params {
	var p otherParams
	d.float("bin_width", &p.BinWidth)
	d.str("method", &p.Method)
	return p
}
func (otherKind) check(c Config) []error { return checkBinWidth(c) }
func (otherKind) release(a *aggregate, _ *closing, _ dp.Source, _ map[string]float64) ([]FitMessage, error) {
	return nil, fieldErr("kind", ErrInvalid, "%q is not %s", a.cfg.Kind, kindNames)
}
