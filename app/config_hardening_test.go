package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

// Defect 6: hostile or careless configuration is refused, and every error
// names its field path.
func TestConfigHardening(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxCohorts+1)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprint("c", i))
	}
	wantEditsRefused(t, validYAML, []configEdit{
		{"fractional max_batch", "topic: ehr.tte", "topic: ehr.tte\n  max_batch: 1.5", `input.max_batch: must be an integer, got "1.5"`},
		{"type error names the path", "time_max: 5000", "time_max: [1, 2]", "schema.time_max: cannot unmarshal !!seq"},
		{"type error in a flow mapping names its parent", "epsilon: 0.5, window: 10", "epsilon: 0.5, window: {a: 1}", "sanitizers.time"},
		{"type error in a nested block", "  key_file: /tmp/key", "  key_file: /tmp/key\n  pseudonymize_id: [1]", "sanitizers.pseudonymize_id: cannot unmarshal !!seq"},
		{"session timeout below the brokers' minimum", "topic: ehr.tte", "topic: ehr.tte\n  session_timeout: 3s", "input.session_timeout: must be between 6s"},
		{"rebalance timeout", "topic: ehr.tte", "topic: ehr.tte\n  rebalance_timeout: 10m", "input.rebalance_timeout: must be between 1s and 5m"},
		{"too many cohorts", `cohorts: ["1", "2"]`, "cohorts: [" + strings.Join(many, ", ") + "]", fmt.Sprintf("schema.cohorts: %d labels exceed the limit of %d", MaxCohorts+1, MaxCohorts)},
		{"max message bytes", "sanitized_topic: ehr.tte.sanitized", "sanitized_topic: ehr.tte.sanitized\n  max_message_bytes: 100", "output.max_message_bytes: must be between 16 KiB and 64 MiB"},
	})
	cfg, err := ParseConfig([]byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Listen != "127.0.0.1:8080" {
		t.Errorf("default http.listen %q, want loopback only", cfg.HTTP.Listen)
	}
	if cfg.Input.RebalanceTimeout != 10*time.Second || cfg.Output.MaxMessageBytes != sanitize.DefaultMaxMessageBytes || cfg.Input.MaxDeadLetterRows != sanitize.DefaultMaxDeadRows {
		t.Errorf("defaults: %+v %+v", cfg.Input, cfg.Output)
	}
}

func TestLoadConfigBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(validYAML+"#"+strings.Repeat("x", MaxConfigBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(big); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("config over %d bytes: %v", MaxConfigBytes, err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		start := time.Now()
		if _, err := LoadConfig("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("/dev/zero as config: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("refusing /dev/zero took %v", d)
		}
	}
}

func TestReadKeyFileHardening(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hexKey := []byte(strings.Repeat("ab", 32) + "\n")
	raw := []byte(strings.Repeat("k", 32))
	text := []byte("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
	for _, tc := range []struct {
		name       string
		path       string
		allowGroup bool
		want       string // "" = accepted
	}{
		{"hex owner-only", write("hex", hexKey, 0o600), false, ""},
		{"raw 32 bytes", write("raw", raw, 0o400), false, ""},
		{"world-readable", write("world", hexKey, 0o644), false, "readable by others"},
		{"world-readable even when group is allowed", write("world2", hexKey, 0o604), true, "readable by others"},
		{"group-readable refused by default", write("group", hexKey, 0o640), false, "readable by others"},
		{"group-readable allowed by the field", write("group2", hexKey, 0o440), true, ""},
		{"text file (/etc/passwd-like)", write("passwd", text, 0o600), false, "want exactly 32 raw bytes or 64 hex digits"},
		{"33 raw bytes", write("raw33", append(raw, 'x'), 0o600), false, "want exactly 32 raw bytes"},
		{"device", "/dev/zero", true, "not a regular file"},
		{"directory", dir, true, "not a regular file"},
		{"large file", write("large", make([]byte, 1<<20), 0o600), false, "more than the 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == "/dev/zero" {
				if _, err := os.Stat(tc.path); err != nil {
					t.Skip("no /dev/zero")
				}
			}
			start := time.Now()
			k, err := ReadKeyFile(tc.path, tc.allowGroup)
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			switch {
			case tc.want == "" && (err != nil || len(k) != 32):
				t.Fatalf("want a 32-byte key, got %d bytes, %v", len(k), err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sanitizers.key_file")):
				t.Fatalf("want sanitizers.key_file error containing %q, got %v", tc.want, err)
			}
			if strings.Contains(tc.want, "readable") && !errors.Is(err, kafkaconn.ErrSecretFileMode) {
				t.Errorf("mode error does not wrap ErrSecretFileMode: %v", err)
			}
		})
	}
}
