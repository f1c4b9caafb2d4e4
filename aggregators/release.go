package aggregators

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/schemas"
)

// FitSchema names the JSON document of every fit message
// (schemas.FitSchemaName).
const FitSchema = schemas.FitSchemaName

// Neighbouring relations stated in releases.
const (
	NeighbouringReplaceOne      = "replace-one"
	NeighbouringReplaceInCohort = "replace-one within a cohort: the cohort's record count in the window is public (not protected); whether a given patient is in the window is protected only given that count"
	// NeighbouringAddRemoveInCohort is the relation of the weibull Laplace
	// baseline (a clamped estimate: its sensitivity does not depend on n).
	NeighbouringAddRemoveInCohort = "add/remove-one within a cohort (the record count is protected)"
	compositionWindow             = "parallel across cohorts and time bins within the window (each record is in one cell of one window); sequential across windows: each window is charged epsilon to stream, aggregate and every cohort scope"
	compositionWindowWeibull      = "parallel across cohorts within the window (one fit per cohort on disjoint records, under add/remove-one within a cohort); sequential across windows: each window is charged epsilon to stream, aggregate and every cohort scope"
	compositionWindowWeibullSAA   = "parallel across cohorts within the window (one fit per cohort on disjoint records, under replace-one within a cohort); sequential across windows: each window is charged epsilon to stream, aggregate and every cohort scope"
	compositionCumulative         = "continual release by binary-tree counter: epsilon is charged once (ledger key <aggregate>/cumulative) for all horizon releases; each window's release is post-processing of stored node noise and charges 0"
	weibullScaleUnitDescription   = "normalised time (t / time_max)"
	// PublicCountElsewhere and NeighbouringPresenceNotProtected amend an
	// add/remove-one release when another aggregate of the service
	// releases exact window counts (ledger.allow_public_counts).
	PublicCountElsewhere             = "n (the window's exact record count, released by another aggregate of this service: ledger.allow_public_counts)"
	NeighbouringPresenceNotProtected = "; presence is NOT protected: another aggregate of this service releases the exact record count (ledger.allow_public_counts)"
	// PublicViaSanitized and NeighbouringSanitizedTopic amend every release
	// of a service that also publishes a sanitized topic
	// (output.sanitized_topic) from the same input.
	// CompositionReplaceOneCharge amends an add/remove-one release charged
	// its replace-one cost (Config.ReplaceOneAccounting).
	CompositionReplaceOneCharge = "; charged 2 epsilon, its replace-one cost: presence and the count are public in this service, so the budget is accounted under replace-one (replace = remove + add)"
	PublicViaSanitized          = "presence and n (the sanitized topic of this service publishes one row per validated record of the input: a pseudonym and the event flag)"
	NeighbouringSanitizedTopic  = "; presence and the record count are NOT protected by this release alone: this service's sanitized topic publishes one row per record (run without output.sanitized_topic for central releases only)"
)

// F is a float64 that encodes NaN and ±Inf as JSON null (R's NA) and
// decodes null as NaN: schemas.NullableFloat, the one encoding of R's NA.
type F = schemas.NullableFloat

func fs(x []float64) []F { return schemas.NullableFloats(x) }

// FitMessage is the JSON value of one fit-topic message: one release of
// one aggregate, window and cohort. Field names follow interfaces.md (R's
// survfit / survreg names).
type FitMessage struct {
	Schema          string  `json:"schema"`
	Key             string  `json:"key"`
	Aggregate       string  `json:"aggregate"`
	Kind            string  `json:"kind"`
	WindowStart     string  `json:"window_start"`
	WindowEnd       string  `json:"window_end"`
	WindowStartUnix int64   `json:"window_start_unix"`
	WindowEndUnix   int64   `json:"window_end_unix"`
	WindowTime      string  `json:"window_time"`
	LatenessSeconds float64 `json:"lateness_seconds"`
	Cumulative      bool    `json:"cumulative"`
	ReleaseIndex    int     `json:"release_index,omitempty"`
	Horizon         int     `json:"horizon,omitempty"`
	// HorizonEpoch numbers a cumulative aggregate's horizons (1, 2, ...):
	// a new horizon, charged anew, starts when the state of the previous
	// one was lost (docs/privacy.md).
	HorizonEpoch   int     `json:"horizon_epoch,omitempty"`
	Cohort         string  `json:"cohort"`
	Method         string  `json:"method"`
	Mechanism      string  `json:"mechanism"`
	Epsilon        float64 `json:"epsilon"`
	EpsilonCharged float64 `json:"epsilon_charged"`
	Guarantee      string  `json:"guarantee"`
	Neighbouring   string  `json:"neighbouring"`
	// Public lists what the release treats as public (does not protect):
	// configuration, and the record count n where the relation is
	// replace-one. Every field is a function of these and of the noise.
	Public      []string `json:"public"`
	Composition string   `json:"composition"`
	// Contribution states what one patient contributes to the window
	// (ContributionPerPatient).
	Contribution    string             `json:"contribution"`
	Scopes          []string           `json:"scopes"`
	BudgetRemaining map[string]float64 `json:"budget_remaining"`
	N               F                  `json:"n"`
	TimeUnit        string             `json:"time_unit"`
	TimeMax         float64            `json:"time_max"`
	BinWidth        float64            `json:"bin_width,omitempty"` // km, weibull
	// LowInformation flags a release that says little about the data, in
	// every kind, and LowInformationReason says why ("" if not flagged):
	// km, a cohort whose noisy record count is below
	// KMFields.LowInformationThreshold (no median released); weibull,
	// weibull.WeibullLowInformation (shape interval at the public range's
	// edge, noise dominating, or a noisy event count below its threshold);
	// discrete, regression.AssessInformation.
	LowInformation       bool   `json:"low_information"`
	LowInformationReason string `json:"low_information_reason"`
	// HorizonRule states administrative censoring at time_max (every
	// kind). CensoredAtHorizon, the number of records it applied to, is
	// always null: an exact function of the private records, which the
	// release's epsilon does not cover (operators see it in
	// dpsurv_aggregator_censored_at_horizon_total).
	HorizonRule       string `json:"horizon_rule"`
	CensoredAtHorizon *int   `json:"censored_at_horizon"`
	*KMFields
	*WeibullFields
	*DiscreteFields
}

// windowDoc is what the ledger stores for one window: the exact fit
// messages, so that a replay publishes identical bytes.
type windowDoc struct {
	Aggregate       string       `json:"aggregate"`
	WindowStartUnix int64        `json:"window_start_unix"`
	Messages        []docMessage `json:"messages"`
	// Draw identifies the tree-counter step behind a cumulative release
	// (a random nonce drawn with its node noise): a replay with another
	// Draw is a foreign holder's value.
	Draw string `json:"draw,omitempty"`
	// Withheld, when set, says why the window has no messages: its release
	// failed after its noise was drawn, so it is stored (and charged) as
	// withheld instead of being drawn again.
	Withheld string `json:"withheld,omitempty"`
}

// WithheldBuildFailed is windowDoc.Withheld for a release whose build
// failed after noise may have been drawn. Drawing again until a build
// succeeds would make what is published depend on whether the first draw
// failed on these data; instead the window's epsilon is charged, nothing
// is published, and the ledger's entry keeps every later attempt (any
// holder, any restart) from drawing again.
const WithheldBuildFailed = "release failed after its noise was drawn: withheld and charged, never drawn again"

// WithheldPendingLimit is windowDoc.Withheld for a window that closed
// while its aggregate already had EngineConfig.MaxPendingWindows windows
// waiting for their release (fits slower than the windows): it is withheld
// without drawing noise and charged, like a release, so that the charges —
// and every later release's budget_remaining, and which windows the budget
// still admits — do not depend on how long earlier fits took (a function
// of their data).
const WithheldPendingLimit = "withheld unfitted: the aggregate's pending windows were at ledger.max_pending_windows when it closed (fits slower than the windows); charged like a release"

// buildFault, when set (tests only), fails the next release builds of
// non-counter kinds after their noise is drawn.
var buildFault func() error

// fitGate, when set (tests only), is called before each window fit with
// the aggregate's name and the window's start (Unix ns): a test holds a
// fit there to see what waits for it.
var fitGate func(aggregate string, start int64)

type docMessage struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// WindowKey is the ledger key of a window's release.
func WindowKey(aggregate string, startUnix int64) string {
	return aggregate + "/" + strconv.FormatInt(startUnix, 10)
}

// MessageKey is the fit-topic key of one cohort's release.
func MessageKey(aggregate string, startUnix int64, cohort string) string {
	return WindowKey(aggregate, startUnix) + "/" + cohort
}

// cumulativeKey is the ledger key of the one charge of a cumulative
// aggregate's horizon number epoch (1, 2, ...): "<aggregate>/cumulative"
// for the first (the key of every earlier version), then
// "<aggregate>/cumulative/<epoch>".
func cumulativeKey(aggregate string, epoch int) string {
	if epoch <= 1 {
		return aggregate + "/cumulative"
	}
	return aggregate + "/cumulative/" + strconv.Itoa(epoch)
}

// scopes is every scope a release of a charges.
func (a *aggregate) scopes() []string {
	out := []string{ledger.ScopeStream, ledger.ScopeAggregate(a.cfg.Name)}
	for _, c := range a.cfg.Cohorts {
		out = append(out, ledger.ScopeCohort(c))
	}
	return out
}

// ContributionPerPatient is every release's statement of what one patient
// contributes to a window: the unit its neighbouring relation protects.
var ContributionPerPatient = "one record per patient per window: records are keyed by a keyed pseudonym of the id, and a later version of a patient's record replaces the earlier one in its window (latest version wins); at most " +
	strconv.Itoa(MaxPatientsPerWindow) + " patients per window, a new patient beyond that is not counted, and a window in which that bound binds is withheld (reason max_patients: admitting one patient could exclude another), so whether a window reached the bound is public"

// ContributionCumulative is a cumulative km release's statement: one
// contribution per patient for the whole horizon, as the tree counter's
// sensitivity 1 assumes.
var ContributionCumulative = "one record per patient for the whole horizon: records are keyed by a keyed pseudonym of the id; a patient is counted only in the first window a version of theirs arrives in (a later version replaces the earlier one while that window is open; versions arriving in later windows are not counted); at most " +
	strconv.Itoa(MaxPatientsPerHorizon) + " patients per horizon and " + strconv.Itoa(MaxPatientsPerWindow) + " per window, a new patient beyond either is not counted, a window in which a bound binds is withheld (reason max_patients), so whether a window reached a bound is public, and a patient excluded by the per-window bound is not counted later in the horizon"

// header fills the metadata common to every cohort of window s.
func (a *aggregate) header(s int64, cohort int, remaining map[string]float64, charged float64) FitMessage {
	start := time.Unix(0, s).UTC()
	end := time.Unix(0, s+a.size).UTC()
	m := FitMessage{
		Schema: FitSchema, Aggregate: a.cfg.Name, Kind: a.cfg.Kind,
		Key:         MessageKey(a.cfg.Name, start.Unix(), a.cfg.Cohorts[cohort]),
		WindowStart: start.Format(time.RFC3339), WindowEnd: end.Format(time.RFC3339),
		WindowStartUnix: start.Unix(), WindowEndUnix: end.Unix(),
		WindowTime: a.cfg.Window.Time, LatenessSeconds: a.cfg.Window.Lateness.Seconds(),
		Cumulative: a.cfg.Window.Cumulative, Cohort: a.cfg.Cohorts[cohort],
		Epsilon: a.cfg.Epsilon, EpsilonCharged: charged,
		Contribution: ContributionPerPatient,
		Scopes:       a.scopes(), BudgetRemaining: remaining,
		TimeUnit: a.cfg.TimeUnit, TimeMax: a.cfg.TimeMax, BinWidth: binWidth(a.cfg),
		HorizonRule: HorizonRule,
	}
	if m.BudgetRemaining == nil {
		m.BudgetRemaining = map[string]float64{}
	}
	return m
}

// HorizonRule is every fit message's horizon_rule (the CLI's fits state
// the same rule): mechanisms.md section 0, erratum "time beyond the
// horizon".
const HorizonRule = "administrative censoring: a time beyond time_max counts as (time_max, censored), never as an event at time_max"

// buildWindow draws the window's release (the only place noise is drawn
// for a non-cumulative window) and returns the ledger document.
func (a *aggregate) buildWindow(c *closing, src dp.Source, remaining map[string]float64) ([]byte, error) {
	msgs, err := a.fitWindow(c, src)
	return a.encodeWindow(c, msgs, err, remaining)
}

// fitWindow draws window c's release (its noise and the fit) without the
// budget statement, which only the ledger knows at the moment it records
// the release (encodeWindow): an asynchronous fit is drawn once, however
// the budget moves while it runs.
func (a *aggregate) fitWindow(c *closing, src dp.Source) ([]FitMessage, error) {
	if fitGate != nil {
		fitGate(a.cfg.Name, c.start)
	}
	msgs, err := a.kind.release(a, c, src, nil)
	if err == nil && buildFault != nil {
		err = buildFault()
	}
	if err != nil {
		return nil, err
	}
	if a.cfg.CountsPublicElsewhere {
		for i := range msgs {
			msgs[i].Public = append(msgs[i].Public, PublicCountElsewhere)
			msgs[i].Neighbouring += NeighbouringPresenceNotProtected
		}
	}
	if a.cfg.PresencePublicViaSanitized {
		for i := range msgs {
			msgs[i].Public = append(msgs[i].Public, PublicViaSanitized)
			msgs[i].Neighbouring += NeighbouringSanitizedTopic
		}
	}
	if a.cfg.ChargedEpsilon() != a.cfg.Epsilon {
		for i := range msgs {
			msgs[i].Composition += CompositionReplaceOneCharge
		}
	}
	return msgs, nil
}

// encodeWindow is the ledger document of window c's fit (msgs, or the
// fit's error fitErr) stating remaining as the budget left after its
// charge. A failed fit of a non-counter kind is stored as withheld
// (WithheldBuildFailed); a counter kind's error is returned (its node
// noise is drawn when the window is stepped into the counter, not here:
// its build is retried).
func (a *aggregate) encodeWindow(c *closing, msgs []FitMessage, fitErr error, remaining map[string]float64) ([]byte, error) {
	c.buildErr = nil
	if fitErr != nil {
		if a.counter != nil {
			return nil, fitErr
		}
		c.buildErr = fitErr
		return a.withheldDoc(c, WithheldBuildFailed)
	}
	if remaining == nil {
		remaining = map[string]float64{}
	}
	doc := windowDoc{Aggregate: a.cfg.Name, WindowStartUnix: time.Unix(0, c.start).Unix(), Draw: c.draw}
	for _, m := range msgs {
		m.BudgetRemaining = remaining
		v, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode release: %w", err)
		}
		doc.Messages = append(doc.Messages, docMessage{Key: m.Key, Value: v})
	}
	return json.Marshal(doc)
}

// withheldDoc is the ledger document of window c withheld for reason.
func (a *aggregate) withheldDoc(c *closing, reason string) ([]byte, error) {
	return json.Marshal(windowDoc{Aggregate: a.cfg.Name, WindowStartUnix: time.Unix(0, c.start).Unix(), Draw: c.draw, Withheld: reason})
}

// decodeDoc parses a stored window release.
func decodeDoc(b []byte) (windowDoc, error) {
	var d windowDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("decode stored release: %w", err)
	}
	return d, nil
}
