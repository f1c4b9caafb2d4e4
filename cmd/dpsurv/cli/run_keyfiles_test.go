package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd/configtest"
)

// Defect 6: `dpsurv run --dry-run` with key_file /dev/zero used to read
// until 23 GB RSS and ignore SIGTERM; a world-readable key file and a text
// file were taken as keys.
func TestRunDryRunRefusesHostileKeyFiles(t *testing.T) {
	dir := t.TempDir()
	world := filepath.Join(dir, "world.key")
	if err := os.WriteFile(world, []byte(strings.Repeat("5a", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(world, 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "passwd")
	if err := os.WriteFile(text, []byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, key, want string }{
		{"device", "/dev/zero", "not a regular file"},
		{"world-readable", world, "readable by others"},
		{"text file", text, "want exactly 32 raw bytes or 64 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.key); err != nil {
				t.Skipf("no %s", tc.key)
			}
			p := configtest.Write(t, filepath.Join(t.TempDir(), "c.yaml"), configtest.Config{Key: tc.key}.YAML())
			start := time.Now()
			_, e, code := run(t, "run", "--config", p, "--dry-run")
			if code == 0 || !strings.Contains(e, "sanitizers.key_file") || !strings.Contains(e, tc.want) {
				t.Fatalf("exit %d, stderr %s; want a sanitizers.key_file error containing %q", code, e, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusing took %v", d)
			}
		})
	}
}
