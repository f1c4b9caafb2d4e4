package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/sanitizers"
)

// Config is the service configuration (`dpsurv run --config FILE`). Every
// bound in it is public; the only secrets are files it points to.
type Config struct {
	Kafka       kafkaconn.Config   `yaml:"kafka"`
	Input       InputConfig        `yaml:"input"`
	Schema      SchemaConfig       `yaml:"schema"`
	Sanitizers  SanitizersConfig   `yaml:"sanitizers"`
	Output      OutputConfig       `yaml:"output"`
	Aggregators []AggregatorConfig `yaml:"aggregators"`
	Ledger      LedgerConfig       `yaml:"ledger"`
	HTTP        HTTPConfig         `yaml:"http"`
	Log         LogConfig          `yaml:"log"`
}

// InputConfig names the input topic.
type InputConfig struct {
	Topic   string `yaml:"topic"`
	GroupID string `yaml:"group_id"`
	// Format of each message value: arrow (one Arrow IPC stream) or json
	// (JSON lines).
	Format string `yaml:"format"`
	// MaxBatch is how many messages are processed and committed together.
	MaxBatch int `yaml:"max_batch"`
	// Partitions is the input topic's partition count when dpsurv creates
	// it (demo, tests); 0 leaves existing topics alone.
	Partitions int `yaml:"partitions"`
	// SessionTimeout is how long the group waits for a silent replica
	// before moving its partitions to the others (default 10s); the
	// heartbeat is a third of it.
	SessionTimeout time.Duration `yaml:"session_timeout"`
}

// SchemaConfig is the public description of the input.
type SchemaConfig struct {
	TimeUnit   string   `yaml:"time_unit"`
	TimeMax    float64  `yaml:"time_max"`
	Cohorts    []string `yaml:"cohorts"`
	Covariates []string `yaml:"covariates"`
	Public     []string `yaml:"public"`
}

// SanitizersConfig configures the per-record mechanisms.
type SanitizersConfig struct {
	KeyFile        string                  `yaml:"key_file"`
	PseudonymizeID *bool                   `yaml:"pseudonymize_id"`
	Time           sanitizers.TimeConfig   `yaml:"time"`
	Cohort         sanitizers.CohortConfig `yaml:"cohort"`
}

// OutputConfig names the output topics.
type OutputConfig struct {
	SanitizedTopic  string `yaml:"sanitized_topic"`
	DeadLetterTopic string `yaml:"dead_letter_topic"`
	FitTopic        string `yaml:"fit_topic"`
	// FitArrowTopic receives the Arrow curve table of each km release
	// (default: fit_topic + ".arrow").
	FitArrowTopic string `yaml:"fit_arrow_topic"`
}

// AggregatorConfig configures one windowed DP aggregate.
type AggregatorConfig struct {
	Name    string         `yaml:"name"`
	Kind    string         `yaml:"kind"` // km | weibull | discrete
	Window  WindowConfig   `yaml:"window"`
	Epsilon float64        `yaml:"epsilon"`
	Params  map[string]any `yaml:"params"`
}

// WindowConfig configures windowing.
type WindowConfig struct {
	Size       time.Duration `yaml:"size"`
	Lateness   time.Duration `yaml:"lateness"`
	Time       string        `yaml:"time"` // event | processing
	Cumulative bool          `yaml:"cumulative"`
	// Horizon is the number of windows a cumulative aggregate's one
	// epsilon covers (required with cumulative).
	Horizon int `yaml:"horizon"`
}

// LedgerConfig configures the privacy ledger.
type LedgerConfig struct {
	Topic  string             `yaml:"topic"`
	File   string             `yaml:"file"`
	Budget map[string]float64 `yaml:"budget"`
	// CheckpointInterval is how often the aggregators checkpoint and
	// commit when no window closes (default 5s).
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// LeaseSessionTimeout is how long the aggregator lease group waits for
	// a silent holder (killed, partitioned) before another replica takes
	// the lease (default 10s; Kafka-ledger mode only).
	LeaseSessionTimeout time.Duration `yaml:"lease_session_timeout"`
}

// HTTPConfig configures the metrics and health endpoints.
type HTTPConfig struct {
	Listen string `yaml:"listen"`
}

// LogConfig configures logging.
type LogConfig struct {
	Level string `yaml:"level"`
}

// DefaultConfig returns the defaults every loaded config starts from.
func DefaultConfig() Config {
	yes := true
	return Config{
		Kafka:      kafkaconn.Config{ClientID: "dpsurv"},
		Input:      InputConfig{GroupID: "dpsurv", Format: "arrow", MaxBatch: 64, SessionTimeout: 10 * time.Second},
		Schema:     SchemaConfig{TimeUnit: "days", Public: []string{"event"}},
		Sanitizers: SanitizersConfig{PseudonymizeID: &yes},
		HTTP:       HTTPConfig{Listen: ":8080"},
		Log:        LogConfig{Level: "info"},
	}
}

// LoadConfig reads and validates a YAML config file. Unknown keys are
// errors that name their path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	return ParseConfig(data)
}

// ParseConfig parses and validates YAML config bytes.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return cfg, fmt.Errorf("parse config: %w", err)
	}
	if len(root.Content) == 0 {
		return cfg, errors.New("parse config: empty document")
	}
	if err := checkKeys(root.Content[0], reflect.TypeOf(cfg), ""); err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("parse config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkKeys walks a YAML mapping against a struct type and reports the first
// unknown key by its dotted path.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "-" || !f.IsExported() {
				continue
			}
			if tag == "" {
				tag = strings.ToLower(f.Name)
			}
			fields[tag] = f.Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			p := join(path, k)
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: unknown field (line %d)", p, n.Content[i].Line)
			}
			if err := checkKeys(n.Content[i+1], ft, p); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// Validate checks the configuration; every error names its field path.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if err := c.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Input.Topic == "" {
		add("input.topic: required")
	}
	if c.Input.GroupID == "" {
		add("input.group_id: required")
	}
	switch c.Input.Format {
	case "arrow", "json":
	default:
		add("input.format: %q is not arrow or json", c.Input.Format)
	}
	if c.Input.MaxBatch < 1 || c.Input.MaxBatch > 10000 {
		add("input.max_batch: must be in [1, 10000], got %d", c.Input.MaxBatch)
	}
	if c.Input.Partitions < 0 {
		add("input.partitions: must be >= 0")
	}
	if c.Input.SessionTimeout != 0 && (c.Input.SessionTimeout < 3*time.Second || c.Input.SessionTimeout > 5*time.Minute) {
		add("input.session_timeout: must be between 3s and 5m, got %v", c.Input.SessionTimeout)
	}
	if c.Schema.TimeUnit == "" {
		add("schema.time_unit: required")
	}
	if !(c.Schema.TimeMax > 0) || math.IsInf(c.Schema.TimeMax, 0) {
		add("schema.time_max: must be a positive public bound, got %v", c.Schema.TimeMax)
	}
	if len(c.Schema.Cohorts) == 0 {
		add("schema.cohorts: at least one public label required")
	}
	seen := map[string]bool{}
	for i, l := range c.Schema.Cohorts {
		if l == "" {
			add("schema.cohorts[%d]: empty label", i)
		}
		if seen[l] {
			add("schema.cohorts[%d]: duplicate label %q", i, l)
		}
		seen[l] = true
	}
	known := map[string]bool{"event": true, "time": true, "cohort": true, "site": true, "observed_at": true}
	for _, cv := range c.Schema.Covariates {
		known[cv] = true
	}
	for i, p := range c.Schema.Public {
		if !known[p] && p != "id" {
			add("schema.public[%d]: %q is not an input field (event, time, cohort, site, observed_at or a listed covariate)", i, p)
		}
	}
	if c.Sanitizers.KeyFile == "" {
		add("sanitizers.key_file: required: the service refuses to start without a PRF key")
	}
	if c.Output.SanitizedTopic == "" {
		add("output.sanitized_topic: required")
	}
	if c.Output.DeadLetterTopic == "" {
		add("output.dead_letter_topic: required")
	}
	if c.Output.SanitizedTopic != "" && c.Output.SanitizedTopic == c.Input.Topic {
		add("output.sanitized_topic: must differ from input.topic")
	}
	// aggregators, ledger and fit topics: aggregate_config.go
	errs = append(errs, c.validateAggregation()...)
	for k, v := range c.Ledger.Budget {
		if !(v > 0) || math.IsInf(v, 0) {
			add("ledger.budget.%s: must be positive and finite", k)
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level: %q is not debug, info, warn or error", c.Log.Level)
	}
	return errors.Join(errs...)
}

// SanitizerConfig builds the sanitizer chain's configuration around a key.
func (c Config) SanitizerConfig(key []byte) sanitizers.Config {
	pseudo := c.Sanitizers.PseudonymizeID == nil || *c.Sanitizers.PseudonymizeID
	return sanitizers.Config{
		Key: key, Cohorts: c.Schema.Cohorts, TimeMax: c.Schema.TimeMax, TimeUnit: c.Schema.TimeUnit,
		PseudonymizeID: pseudo, Time: c.Sanitizers.Time, Cohort: c.Sanitizers.Cohort, Public: c.Schema.Public,
	}
}

// ReadKey reads the PRF key file: raw bytes, or hex text (64+ hex digits,
// surrounding whitespace ignored).
func ReadKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("sanitizers.key_file: required: the service refuses to start without a PRF key")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sanitizers.key_file: %w", err)
	}
	return DecodeKey(b)
}
