package app

import (
	"strings"
	"testing"
)

// input.isolation_level: read_committed by default, read_uncommitted on
// request, anything else refused naming the field.
func TestInputIsolationLevelConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ value, wantErr string }{
		{"", ""},
		{"read_committed", ""},
		{"read_uncommitted", ""},
		{"read_commited", `input.isolation_level: "read_commited" is not read_committed or read_uncommitted`},
		{"READ_COMMITTED", "input.isolation_level"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			y := validYAML
			if tc.value != "" {
				y = strings.Replace(y, "  topic: ehr.tte\n", "  topic: ehr.tte\n  isolation_level: "+tc.value+"\n", 1)
			}
			cfg, err := ParseConfig([]byte(y))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParseConfig: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ParseConfig = %v, want an error containing %q", err, tc.wantErr)
			case tc.wantErr == "" && cfg.Input.IsolationLevel != tc.value:
				t.Fatalf("isolation level %q, want %q", cfg.Input.IsolationLevel, tc.value)
			}
		})
	}
}
