package kafkaconn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPasswordFileMode(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode       os.FileMode
		allowGroup bool
		ok         bool
	}{
		{0o600, false, true},
		{0o640, false, false},
		{0o440, true, true},
		{0o644, true, false},
	} {
		p := filepath.Join(dir, fmt.Sprintf("pw-%o", tc.mode))
		if err := os.WriteFile(p, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		c := Config{SASL: SASLConfig{Mechanism: "plain", Username: "u", PasswordFile: p, AllowGroupReadable: tc.allowGroup}}
		pw, err := c.password()
		if tc.ok && (err != nil || pw != "secret") {
			t.Errorf("mode %o allow %v: %q %v", tc.mode, tc.allowGroup, pw, err)
		}
		if !tc.ok && (err == nil || !errors.Is(err, ErrSecretFileMode) || !strings.HasPrefix(err.Error(), "kafka.sasl.password_file")) {
			t.Errorf("mode %o allow %v: want a mode error, got %v", tc.mode, tc.allowGroup, err)
		}
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		c := Config{SASL: SASLConfig{Mechanism: "plain", Username: "u", PasswordFile: "/dev/zero", AllowGroupReadable: true}}
		if _, err := c.password(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("/dev/zero password file: %v", err)
		}
	}
}
