package servicecmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd/configtest"
)

// The slim binary's `run` checks what the full binary's does before it
// runs (servicecmd.Load, shared): a Kafka password file that cannot be
// read is refused, naming its field, instead of failing at the first
// connection; and --dry-run prints the per-patient statement and the
// Kafka warnings as `dpsurv run --dry-run` does (servicecmd.DryRun). The
// slim binary skipped both before the two `run`s shared their code.
func TestSlimRunChecksAsTheFullBinary(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	config := func(sasl string) string {
		return configtest.Write(t, filepath.Join(t.TempDir(), "c.yaml"), configtest.Config{Key: key, Kafka: sasl}.YAML())
	}
	missing := filepath.Join(dir, "no-such-password")
	_, e, code := main("run", "--config", config("sasl: {mechanism: scram-sha-512, username: u, password_file: "+missing+"}"), "--dry-run")
	if code == 0 || !strings.Contains(e, "kafka.sasl.password_file") {
		t.Errorf("unreadable password file: exit %d, stderr %q; want a refusal naming kafka.sasl.password_file", code, e)
	}
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, e, code := main("run", "--config", config("sasl: {mechanism: plain, username: u, password_file: "+pw+"}"), "--dry-run")
	if code != 0 {
		t.Fatalf("dry run: exit %d, stderr %q", code, e)
	}
	for _, want := range []string{`"config":"ok"`, `"guarantees":`, `"patient_statement":`, `"warnings":["kafka.sasl.mechanism: plain without kafka.tls.enabled`} {
		if !strings.Contains(o, want) {
			t.Errorf("dry run prints %s; want it to contain %s", o, want)
		}
	}
	if strings.Contains(o, "secret") {
		t.Errorf("dry run prints the password: %s", o)
	}
}
