package app

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/processors/sanitize"
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
	// IsolationLevel: read_committed (default: records of aborted
	// transactions are never read) or read_uncommitted.
	IsolationLevel string `yaml:"isolation_level"`
	// SessionTimeout is how long the group waits for a silent replica
	// before moving its partitions to the others (default 10s); the
	// heartbeat is a third of it.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// RebalanceTimeout is how long the group coordinator waits for the
	// members to rejoin during a rebalance (default 10s; kafka-go's own
	// default, 30s, delays every takeover by up to that much).
	RebalanceTimeout time.Duration `yaml:"rebalance_timeout"`
	// StallTimeout: an input partition with lag whose committed offset
	// has not moved for this long (any replica's) makes the service not
	// ready (default 60s).
	StallTimeout time.Duration `yaml:"stall_timeout"`
	// MaxDeadLetterRows is how many failed rows of one message are
	// dead-lettered verbatim (default 100); later failed rows are
	// summarized, one dead letter per reason with their count.
	MaxDeadLetterRows int `yaml:"max_dead_letter_rows"`
	// MaxDecodedBytes bounds the memory one message may decode to
	// (default 64 MiB; never more than 1 MiB + 256 x the message size).
	MaxDecodedBytes int64 `yaml:"max_decoded_bytes"`
}

// SchemaConfig is the public description of the input.
type SchemaConfig struct {
	TimeUnit   string   `yaml:"time_unit"`
	TimeMax    float64  `yaml:"time_max"`
	Cohorts    []string `yaml:"cohorts"`
	Covariates []string `yaml:"covariates"`
	Public     []string `yaml:"public"`
	// Required lists the optional columns (site, observed_at) a message
	// must carry: without it the message is dead-lettered
	// (missing_field). A public optional column not listed here is
	// optional: a message without it, or a null value, gives null.
	Required []string `yaml:"required"`
	// Columns names the input columns (default: the canonical names).
	Columns ColumnsConfig `yaml:"columns"`
}

// SanitizersConfig configures the per-record mechanisms.
type SanitizersConfig struct {
	KeyFile string `yaml:"key_file"`
	// AllowGroupReadableKeyFile accepts a key file its group may read (a
	// Kubernetes Secret volume with fsGroup, mode 0440); by default only
	// its owner may.
	AllowGroupReadableKeyFile bool                    `yaml:"allow_group_readable_key_file"`
	PseudonymizeID            *bool                   `yaml:"pseudonymize_id"`
	Time                      sanitizers.TimeConfig   `yaml:"time"`
	Cohort                    sanitizers.CohortConfig `yaml:"cohort"`
}

// OutputConfig names the output topics.
type OutputConfig struct {
	// SanitizedTopic receives one sanitized row per validated record.
	// Empty (allowed when aggregators are configured): central releases
	// only — no per-record output, so the releases can protect presence
	// and the window's record count (docs/privacy.md).
	SanitizedTopic  string `yaml:"sanitized_topic"`
	DeadLetterTopic string `yaml:"dead_letter_topic"`
	FitTopic        string `yaml:"fit_topic"`
	// FitArrowTopic receives the Arrow curve table of each km release
	// (default: fit_topic + ".arrow").
	FitArrowTopic string `yaml:"fit_arrow_topic"`
	// MaxMessageBytes bounds every message written to the sanitized and
	// dead-letter topics (key, value, headers; default 1,000,000). Set it
	// at or below the topics' max.message.bytes (broker default
	// 1,048,588) minus 1 KiB: sanitized batches are split to fit, dead
	// letters truncated.
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// TraceContext copies a well-formed W3C traceparent/tracestate of an
	// input message to its sanitized messages (default true; false:
	// only the dpsurv-source header). docs/privacy.md says what it links.
	TraceContext *bool `yaml:"trace_context"`
}

// AggregatorConfig is one windowed DP aggregate: the aggregators' own
// config type (one type, read from YAML here, validated there); the
// schema.* fields are filled in by AggregatorConfigs.
type AggregatorConfig = aggregators.Config

// WindowConfig configures an aggregate's windowing.
type WindowConfig = aggregators.Window

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
	// DrainTimeout bounds the aggregators' stop (SIGTERM, or the lease
	// moving on): the tick in flight and the publication of the windows
	// charged but not yet published get half of it each at most, then the
	// final checkpoint and offset commit (default 10s). A charged window
	// still unpublished is in that checkpoint for the next holder.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// MaxPendingWindows bounds each weibull or discrete aggregate's closed
	// windows waiting for their fit and release (default 32): a window
	// closing beyond it is withheld unfitted and charged (reason
	// pending_limit).
	MaxPendingWindows int `yaml:"max_pending_windows"`
	// AllowPublicCounts accepts aggregates that release a window's exact
	// record count (kind discrete, weibull method saa: n public,
	// replace-one) beside add/remove-one aggregates (km, weibull lsp and
	// laplace) on the same input. Without it such a mix is refused: the
	// exact count undoes the presence protection the add/remove-one
	// releases claim. With it, those releases list the count as public and
	// say that presence is not protected.
	AllowPublicCounts bool `yaml:"allow_public_counts"`
}

// HTTPConfig configures the metrics and health endpoints.
type HTTPConfig struct {
	Listen string `yaml:"listen"`
}

// LogConfig configures logging.
type LogConfig struct {
	Level string `yaml:"level"`
}

// DefaultListen is the default http.listen: loopback only. The metrics and
// health endpoints carry no record data but should not be exposed by
// accident; in a pod set http.listen to ":8080" (the Helm chart does) or
// to the pod IP, so that the kubelet's probes and Prometheus reach it.
const DefaultListen = "127.0.0.1:8080"

// DefaultMaxDecodedBytes is the default input.max_decoded_bytes.
const DefaultMaxDecodedBytes = 64 << 20

// Limits on the config itself (a config is trusted, but a careless or
// generated one must fail fast rather than exhaust memory).
const (
	MaxConfigBytes = 1 << 20
	MaxCohorts     = 10_000
)

// DefaultConfig returns the defaults every loaded config starts from.
func DefaultConfig() Config {
	yes := true
	return Config{
		Kafka: kafkaconn.Config{ClientID: "dpsurv"},
		Input: InputConfig{GroupID: "dpsurv", Format: "arrow", MaxBatch: 64, SessionTimeout: 10 * time.Second,
			RebalanceTimeout: 10 * time.Second, StallTimeout: DefaultStallTimeout, MaxDeadLetterRows: sanitize.DefaultMaxDeadRows, MaxDecodedBytes: DefaultMaxDecodedBytes},
		Output:     OutputConfig{MaxMessageBytes: sanitize.DefaultMaxMessageBytes},
		Schema:     SchemaConfig{TimeUnit: "days", Public: []string{"event"}},
		Sanitizers: SanitizersConfig{PseudonymizeID: &yes},
		HTTP:       HTTPConfig{Listen: DefaultListen},
		Log:        LogConfig{Level: "info"},
	}
}

// LoadConfig reads and validates a YAML config file (a regular file of at
// most MaxConfigBytes). Unknown keys and type errors name their path.
func LoadConfig(path string) (Config, error) {
	data, err := readSmallFile(path, MaxConfigBytes)
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	return ParseConfig(data)
}

// readSmallFile reads a regular file of at most max bytes, with a bounded
// reader (kafkaconn.ReadRegularFile).
func readSmallFile(path string, max int64) ([]byte, error) {
	return kafkaconn.ReadRegularFile(path, max, nil)
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
	lines := map[int]string{}
	if err := checkKeys(root.Content[0], reflect.TypeOf(cfg), "", lines); err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("parse config: %w", withPaths(err, lines))
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// lineRE matches the "line N: " prefix of yaml.v3 type errors.
var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// withPaths rewrites yaml.v3 type errors ("line 7: cannot unmarshal ...")
// to name the field path of that line.
func withPaths(err error, lines map[int]string) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var errs []error
	for _, e := range te.Errors {
		if m := lineRE.FindStringSubmatch(e); m != nil {
			if l, _ := strconv.Atoi(m[1]); lines[l] != "" {
				errs = append(errs, fmt.Errorf("%s: %s (line %s)", lines[l], m[2], m[1]))
				continue
			}
		}
		errs = append(errs, errors.New(e))
	}
	return errors.Join(errs...)
}

// checkKeys walks a YAML mapping against a struct type and reports the first
// unknown key, or a non-integer for an integer field (yaml.v3 would
// truncate 1.5 to 1), by its dotted path. It records the path of every
// value's line in lines.
func checkKeys(n *yaml.Node, t reflect.Type, path string, lines map[int]string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path != "" {
		// The deepest path of a line; for several fields on one line (flow
		// style), their common parent.
		old, ok := lines[n.Line]
		switch {
		case !ok, strings.HasPrefix(path, old+"."), strings.HasPrefix(path, old+"["):
			lines[n.Line] = path
		default:
			lines[n.Line] = commonParent(old, path)
		}
	}
	if n.Kind == yaml.ScalarNode {
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if n.Tag != "!!int" && n.Tag != "!!null" {
				return fmt.Errorf("%s: must be an integer, got %q (line %d)", path, n.Value, n.Line)
			}
		case reflect.Int64:
			// time.Duration is an int64: a string like 10s is fine.
			if t != reflect.TypeOf(time.Duration(0)) && n.Tag != "!!int" && n.Tag != "!!null" {
				return fmt.Errorf("%s: must be an integer, got %q (line %d)", path, n.Value, n.Line)
			}
		}
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
			if err := checkKeys(n.Content[i+1], ft, p, lines); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), lines); err != nil {
				return err
			}
		}
	}
	return nil
}

// commonParent is the longest common dotted prefix of two field paths.
func commonParent(a, b string) string {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	n := 0
	for n < len(pa) && n < len(pb) && pa[n] == pb[n] {
		n++
	}
	return strings.Join(pa[:n], ".")
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
	switch c.Input.IsolationLevel {
	case "", "read_committed", "read_uncommitted":
	default:
		add("input.isolation_level: %q is not read_committed or read_uncommitted", c.Input.IsolationLevel)
	}
	// Brokers refuse sessions outside group.min/max.session.timeout.ms
	// (defaults 6 s and 30 min; the embedded broker the same minimum).
	if c.Input.SessionTimeout != 0 && (c.Input.SessionTimeout < 6*time.Second || c.Input.SessionTimeout > 5*time.Minute) {
		add("input.session_timeout: must be between 6s (the brokers' default group.min.session.timeout.ms) and 5m, got %v", c.Input.SessionTimeout)
	}
	if c.Input.RebalanceTimeout != 0 && (c.Input.RebalanceTimeout < time.Second || c.Input.RebalanceTimeout > 5*time.Minute) {
		add("input.rebalance_timeout: must be between 1s and 5m, got %v", c.Input.RebalanceTimeout)
	}
	if c.Input.StallTimeout != 0 && (c.Input.StallTimeout < time.Second || c.Input.StallTimeout > time.Hour) {
		add("input.stall_timeout: must be between 1s and 1h, got %v", c.Input.StallTimeout)
	}
	if c.Input.MaxDeadLetterRows < 0 || c.Input.MaxDeadLetterRows > 100_000 {
		add("input.max_dead_letter_rows: must be in [0, 100000] (0: the default), got %d", c.Input.MaxDeadLetterRows)
	}
	if c.Input.MaxDecodedBytes < 0 || c.Input.MaxDecodedBytes > 1<<30 {
		add("input.max_decoded_bytes: must be in [0, 1 GiB] (0: the default), got %d", c.Input.MaxDecodedBytes)
	}
	if c.Output.MaxMessageBytes != 0 && (c.Output.MaxMessageBytes < 16<<10 || c.Output.MaxMessageBytes > 64<<20) {
		add("output.max_message_bytes: must be between 16 KiB and 64 MiB (0: the default), got %d", c.Output.MaxMessageBytes)
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
	if len(c.Schema.Cohorts) > MaxCohorts {
		add("schema.cohorts: %d labels exceed the limit of %d", len(c.Schema.Cohorts), MaxCohorts)
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
	if c.Output.SanitizedTopic == "" && len(c.Aggregators) == 0 {
		add("output.sanitized_topic: required unless aggregators are configured (without it the service publishes central releases only)")
	}
	if c.Output.DeadLetterTopic == "" {
		add("output.dead_letter_topic: required")
	}
	if c.Output.SanitizedTopic != "" && c.Output.SanitizedTopic == c.Input.Topic {
		add("output.sanitized_topic: must differ from input.topic")
	}
	errs = append(errs, c.validateInputSchema()...) // input_config.go
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

// ReadKey reads the PRF key file for the file-mode commands (sanitize,
// audit): see ReadKeyFile; the file's mode is not checked.
func ReadKey(path string) ([]byte, error) {
	return readKey(path, false, true)
}

// ReadKeyFile reads the service's PRF key file (sanitizers.key_file): a
// regular file, readable by its owner only (or its group too when
// allowGroup), holding exactly the key: 32 raw bytes, or 64 hex digits
// (surrounding whitespace ignored). Anything else — a text file, a device
// such as /dev/zero, a longer file — is refused before it is read whole.
func ReadKeyFile(path string, allowGroup bool) ([]byte, error) {
	return readKey(path, allowGroup, false)
}

// maxKeyFileBytes: 64 hex digits with room for surrounding whitespace.
const maxKeyFileBytes = 256

func readKey(path string, allowGroup, anyMode bool) ([]byte, error) {
	if path == "" {
		return nil, errors.New("sanitizers.key_file: required: the service refuses to start without a PRF key")
	}
	var b []byte
	var err error
	if anyMode {
		b, err = readSmallFile(path, maxKeyFileBytes)
	} else {
		b, err = kafkaconn.ReadSecretFile(path, maxKeyFileBytes, allowGroup)
	}
	if err != nil {
		return nil, fmt.Errorf("sanitizers.key_file: %w", err)
	}
	return DecodeKey(b)
}
