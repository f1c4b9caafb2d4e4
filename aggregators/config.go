package aggregators

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dpsurv/dpsurv/regression"
)

// Kinds of aggregate.
const (
	KindKM      = "km"
	KindWeibull = "weibull"
)

// Window time modes.
const (
	TimeProcessing = "processing"
	TimeEvent      = "event"
)

// MaxOpenWindows bounds the windows one aggregate keeps open at once
// (lateness / size + 2), hence its memory.
const MaxOpenWindows = 64

// MaxHorizon bounds a cumulative aggregate's horizon (windows).
const MaxHorizon = 1 << 20

// Config is one windowed aggregate: the YAML "aggregators" entry of the
// service config (name, kind, window, epsilon, params) and the public
// schema bounds the service fills in. Every field is public configuration.
type Config struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"` // km | weibull | discrete
	// Window is the windowing (window.* in YAML).
	Window Window `yaml:"window"`
	// Epsilon is the budget of one window's release (all cohorts together),
	// or of the whole horizon when Window.Cumulative.
	Epsilon float64 `yaml:"epsilon"`
	// Params are the kind's settings: KMParams, WeibullParams or
	// DiscreteParams (nil: the kind's defaults). From YAML they are held as
	// the node until Resolved decodes them for the kind (DecodeParams).
	Params Params `yaml:"params"`
	// Cohorts are the public labels (the input spec's), TimeMax the public
	// time bound and TimeUnit its unit (schema.*, not set per aggregate).
	Cohorts  []string `yaml:"-"`
	TimeMax  float64  `yaml:"-"`
	TimeUnit string   `yaml:"-"`
	// Covariates are the input's covariate names (schema.covariates): a
	// discrete aggregate's params.covariates must be among them.
	Covariates []string `yaml:"-"`
	// CountsPublicElsewhere (service-level, ledger.allow_public_counts):
	// another aggregate on the same input releases the window's exact
	// record count, so this add/remove-one aggregate's releases list the
	// count as public and state that presence is not protected. Not part
	// of the fingerprint (it changes release text, not the mechanism).
	CountsPublicElsewhere bool `yaml:"-"`
	// PresencePublicViaSanitized (service-level, output.sanitized_topic
	// set): the same service publishes one sanitized row per validated
	// record of the same input (a pseudonym and the event flag), so the
	// window's record count and which pseudonyms are present are public
	// through it; every release lists them as public and states that
	// presence is not protected. Not part of the fingerprint.
	PresencePublicViaSanitized bool `yaml:"-"`
	// ReplaceOneAccounting (service-level): presence and the window's
	// count are public in this service (a sanitized topic, or an
	// exact-count aggregate beside this one), so its budget is accounted
	// under replace-one, the relation every release still protects; an
	// add/remove-one release is charged its replace-one cost, 2 epsilon
	// (replace = remove + add). Not part of the fingerprint.
	ReplaceOneAccounting bool `yaml:"-"`
}

// ChargedEpsilon is what one release (a window, or a cumulative horizon)
// of the aggregate is charged to the ledger: Epsilon, or 2 Epsilon for an
// add/remove-one release under ReplaceOneAccounting.
func (c Config) ChargedEpsilon() float64 {
	if c.ReplaceOneAccounting && !c.ReleasesExactCount() {
		return 2 * c.Epsilon
	}
	return c.Epsilon
}

// Window configures an aggregate's windowing.
type Window struct {
	// Size is the tumbling window length (whole seconds, >= 1 s).
	// Windows are aligned to the Unix epoch.
	Size time.Duration `yaml:"size"`
	// Lateness delays closing: window [s, e) closes when the clock reaches
	// e + Lateness. With event time, records observed in [s, e) are
	// accepted until then; with processing time it only delays the release.
	Lateness time.Duration `yaml:"lateness"`
	// Time is "processing" (the clock when the record is read; default) or
	// "event" (the record's observed_at).
	Time string `yaml:"time"`
	// Cumulative re-publishes the cumulative curve every window through a
	// binary-tree counter, epsilon charged once for Horizon windows (km
	// only; Horizon is required with it).
	Cumulative bool `yaml:"cumulative"`
	Horizon    int  `yaml:"horizon"`
}

// UnmarshalYAML decodes an aggregators entry, keeping its params node for
// Resolved (the keys a kind accepts depend on the kind, decoded after it).
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	type plain Config // the fields without this method
	rest, raw := n, (*yaml.Node)(nil)
	if n.Kind == yaml.MappingNode {
		cp := *n
		cp.Content = nil
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "params" {
				raw = n.Content[i+1]
				continue
			}
			cp.Content = append(cp.Content, n.Content[i], n.Content[i+1])
		}
		rest = &cp
	}
	if err := rest.Decode((*plain)(c)); err != nil {
		return err
	}
	c.Params = nil
	if raw != nil {
		c.Params = rawParams{raw}
	}
	return nil
}

// Resolved returns c with its YAML params decoded for its kind; the error
// joins a FieldError per bad key. A config built in Go is returned as is.
func (c Config) Resolved() (Config, error) {
	r, ok := c.Params.(rawParams)
	if !ok {
		return c, nil
	}
	p, err := DecodeParams(c.Kind, r.n)
	c.Params = p
	return c, err
}

// KM method names accepted in params.method.
const (
	MethodHierarchical   = "hierarchical"
	MethodNoisyHistogram = "noisy-histogram"
)

// ParseParams reads a params map for kind (as decoded from YAML, or built
// in Go) into Params through DecodeParams; unknown keys and values of the
// wrong type are FieldErrors naming the key.
func ParseParams(kind string, m map[string]any) (Params, error) {
	if len(m) == 0 {
		return DecodeParams(kind, nil)
	}
	var n yaml.Node
	if err := n.Encode(m); err != nil {
		p, _ := DecodeParams(kind, nil)
		return p, &FieldError{Path: "params", Err: fmt.Errorf("%w: %v", ErrWrongType, err)}
	}
	return DecodeParams(kind, &n)
}

func (c Config) withDefaults() Config {
	c, _ = c.Resolved() // errors: Check
	if c.Window.Time == "" {
		c.Window.Time = TimeProcessing
	}
	if c.paramsMismatch() == nil { // another kind's params stay: Check refuses them
		kindOf(c).defaults(&c)
	}
	return c
}

// Validate checks the configuration (after defaults); errors name the
// aggregate and the field.
func (c Config) Validate() error {
	if err := errors.Join(c.Check()...); err != nil {
		return fmt.Errorf("aggregate %q: %w", c.Name, err)
	}
	return nil
}

// Check returns one error per problem, each starting with the field's path
// relative to the aggregate ("window.size: ...", "params.bin_width: ...").
func (c Config) Check() []error {
	c, perr := c.Resolved()
	errs := Errors(perr)
	mismatch := c.paramsMismatch()
	if mismatch != nil {
		errs = append(errs, mismatch)
	}
	c = c.withDefaults()
	add := func(path string, sentinel error, format string, a ...any) {
		errs = append(errs, fieldErr(path, sentinel, format, a...))
	}
	if c.Name == "" || strings.ContainsAny(c.Name, "/#") {
		add("name", ErrRequired, "required, without '/' or '#' (it prefixes ledger and message keys)")
	}
	if !knownKind(c.Kind) {
		add("kind", ErrInvalid, "%q is not %s", c.Kind, kindNames)
	}
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
		add("epsilon", ErrInvalid, "must be positive and finite, got %v", c.Epsilon)
	} else if err := checkEpsilonRange(c.Epsilon); err != nil {
		add("epsilon", ErrInvalid, "%v", err) // epsilon.go
	}
	if c.Window.Size < time.Second || c.Window.Size%time.Second != 0 {
		add("window.size", ErrInvalid, "must be a whole number of seconds >= 1s, got %v", c.Window.Size)
	}
	if c.Window.Lateness < 0 {
		add("window.lateness", ErrInvalid, "must be >= 0")
	} else if c.Window.Size >= time.Second && int64(c.Window.Lateness/c.Window.Size)+2 > MaxOpenWindows {
		add("window.lateness", ErrInvalid, "at most %d windows may be open at once; lateness %v / size %v is too many", MaxOpenWindows, c.Window.Lateness, c.Window.Size)
	}
	switch c.Window.Time {
	case TimeProcessing, TimeEvent:
	default:
		add("window.time", ErrInvalid, "%q is not event or processing", c.Window.Time)
	}
	if c.Window.Cumulative {
		if _, ok := kindOf(c).(counter); !ok { // only a counter kind releases continually
			add("window.cumulative", ErrInvalid, "only km aggregates support continual release")
		}
		if c.Window.Horizon < 1 || c.Window.Horizon > MaxHorizon {
			add("window.horizon", ErrInvalid, "a cumulative aggregate needs a horizon in [1, %d] windows, got %d", MaxHorizon, c.Window.Horizon)
		}
	} else if c.Window.Horizon != 0 {
		add("window.horizon", ErrInvalid, "only for cumulative windows")
	}
	if len(c.Cohorts) == 0 {
		add("cohorts", ErrRequired, "at least one public label required")
	}
	if !(c.TimeMax > 0) || math.IsInf(c.TimeMax, 0) {
		add("time_max", ErrInvalid, "must be a positive public bound")
	}
	if mismatch == nil {
		errs = append(errs, kindOf(c).check(c)...)
	}
	return errs
}

// paramsMismatch is the error of params of another kind than c's (nil
// params are the kind's defaults; an unknown kind is Check's own error).
func (c Config) paramsMismatch() error {
	want := kindOf(c).params(&paramDecoder{})
	if c.Params == nil || !knownKind(c.Kind) || reflect.TypeOf(c.Params) == reflect.TypeOf(want) {
		return nil
	}
	return fieldErr("params", ErrInvalid, "%T are not the params of kind %s (%T)", c.Params, c.Kind, want)
}

// Fingerprint identifies the configuration that shapes an aggregate's state
// and releases. A saved state whose fingerprint differs is refused: a
// changed aggregate needs a new name (its window keys would otherwise
// collide with releases made under the old configuration).
func (c Config) Fingerprint() string {
	c = c.withDefaults()
	// The interval share at its default is left out, so that a discrete
	// aggregate saved before the interval release existed restores after an
	// upgrade (TestCheckpointCompat); a non-default share is part of it.
	p := flatParams{}
	if c.Params != nil {
		p = c.Params.flat()
	}
	if p.IntervalEpsilonFraction == regression.DefaultIntervalFraction {
		p.IntervalEpsilonFraction = 0
	}
	b, _ := json.Marshal(struct {
		Kind       string
		Size       int64
		Lateness   int64
		Time       string
		Cumulative bool
		Horizon    int
		Epsilon    float64
		Cohorts    []string
		TimeMax    float64
		TimeUnit   string
		Params     flatParams
	}{c.Kind, int64(c.Window.Size), int64(c.Window.Lateness), c.Window.Time, c.Window.Cumulative, c.Window.Horizon, c.Epsilon,
		c.Cohorts, c.TimeMax, c.TimeUnit, p})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// flatParams is the frozen JSON layout of the params in the fingerprint:
// every kind's params in one flat object, in the order they had when the
// kinds shared one Params struct (TestFingerprintStable). Each kind fills
// its own fields (its params' flat method). Never reorder, rename or drop
// a field: every saved checkpoint would be refused.
type flatParams struct {
	BinWidth                float64   `json:"bin_width"`
	Method                  string    `json:"method"`
	Conf                    float64   `json:"conf"`
	MaxNoiseStdErr          float64   `json:"max_noise_std_err"`
	LogRankSims             int       `json:"logrank_sims,omitempty"`
	IntervalSims            int       `json:"interval_sims,omitempty"`
	Omega                   float64   `json:"omega"`
	Gamma                   float64   `json:"gamma"`
	Rungs                   int       `json:"rungs"`
	Covariates              []string  `json:"covariates,omitempty"`
	Centre                  []float64 `json:"centre,omitempty"`
	Scale                   []float64 `json:"scale,omitempty"`
	Intervals               int       `json:"intervals,omitempty"`
	Knots                   int       `json:"knots,omitempty"`
	Lambda                  float64   `json:"lambda,omitempty"`
	Link                    string    `json:"link,omitempty"`
	TimeMax                 float64   `json:"time_max,omitempty"`
	MaxRecords              int       `json:"max_records,omitempty"`
	Steps                   int       `json:"steps,omitempty"`
	IntervalEpsilonFraction float64   `json:"interval_epsilon_fraction,omitempty"`
}
