package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/processors/sanitize"
	"github.com/dpsurv/dpsurv/sinks"
)

const validYAML = `
kafka:
  brokers: ["127.0.0.1:9092"]
input:
  topic: ehr.tte
schema:
  time_max: 5000
  cohorts: ["1", "2"]
  covariates: [age]
  public: [event, age]
sanitizers:
  key_file: /tmp/key
  time: {mechanism: te, epsilon: 0.5, window: 10}
  cohort: {mechanism: rrr, epsilon: 1.0}
output:
  sanitized_topic: ehr.tte.sanitized
  dead_letter_topic: ehr.tte.deadletter
`

func TestParseConfigValid(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Input.GroupID != "dpsurv" || cfg.Input.Format != "arrow" || cfg.Schema.TimeUnit != "days" || cfg.HTTP.Listen != "127.0.0.1:8080" {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	sc := cfg.SanitizerConfig([]byte("k"))
	if !sc.PseudonymizeID || sc.Time.Window != 10 || sc.Cohort.Epsilon != 1 {
		t.Fatalf("sanitizer config %+v", sc)
	}
}

func TestConfigErrorsNameFieldPath(t *testing.T) {
	t.Parallel()
	wantEditsRefused(t, validYAML, []configEdit{
		{"unknown top", "kafka:", "kafkaa:", "kafkaa: unknown field"},
		{"unknown nested", "  topic: ehr.tte", "  topik: ehr.tte", "input.topik: unknown field"},
		{"unknown deep", "time: {mechanism: te,", "time: {mechanizm: te,", "sanitizers.time.mechanizm: unknown field"},
		{"missing topic", "  topic: ehr.tte\n", "", "input.topic: required"},
		{"bad time max", "time_max: 5000", "time_max: -1", "schema.time_max"},
		{"dup cohort", `["1", "2"]`, `["1", "1"]`, "schema.cohorts[1]: duplicate"},
		{"public unknown", "public: [event, age]", "public: [event, weight]", "schema.public[1]"},
		{"no key", "  key_file: /tmp/key\n", "", "sanitizers.key_file: required"},
		{"format", "  topic: ehr.tte", "  topic: ehr.tte\n  format: avro", "input.format"},
		{"sasl", "brokers: [\"127.0.0.1:9092\"]", "brokers: [\"127.0.0.1:9092\"]\n  sasl: {mechanism: plain}", "kafka.sasl"},
		{"aggregator", "output:", "aggregators:\n  - {name: km, kind: cox, epsilon: 1, window: {size: 1m}}\noutput:", "aggregators[0].kind"},
	})
}

func TestReadKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hexKey := filepath.Join(dir, "hex")
	os.WriteFile(hexKey, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	k, err := ReadKey(hexKey)
	if err != nil || len(k) != 32 || k[0] != 0xab {
		t.Fatalf("hex key: %v %x", err, k)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("tooshort"), 0o600)
	if _, err := ReadKey(short); err == nil || !strings.HasPrefix(err.Error(), "sanitizers.key_file") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := ReadKey(filepath.Join(dir, "missing")); err == nil || !strings.HasPrefix(err.Error(), "sanitizers.key_file") {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := ReadKey(""); err == nil {
		t.Fatal("empty path accepted")
	}
}

// The runtime's default message bound is the Kafka sinks' default batch
// size (pipeline does not import sinks, so the two constants are tied here).
func TestDefaultMaxMessageBytesIsTheSinkDefault(t *testing.T) {
	t.Parallel()
	if sanitize.DefaultMaxMessageBytes != sinks.DefaultBatchBytes {
		t.Fatalf("sanitize.DefaultMaxMessageBytes = %d, sinks.DefaultBatchBytes = %d", sanitize.DefaultMaxMessageBytes, sinks.DefaultBatchBytes)
	}
}
