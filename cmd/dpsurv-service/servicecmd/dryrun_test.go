package servicecmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
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
		p := filepath.Join(t.TempDir(), "c.yaml")
		y := "kafka: {brokers: [\"127.0.0.1:1\"]" + sasl + "}\ninput: {topic: in}\nschema: {time_max: 100, cohorts: [a, b]}\n" +
			"sanitizers:\n  key_file: " + key + "\n  time: {mechanism: te, epsilon: 0.1, window: 10}\n  cohort: {mechanism: rrr, epsilon: 1}\n" +
			"output: {sanitized_topic: out, dead_letter_topic: dlq}\n"
		if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "no-such-password")
	_, e, code := main("run", "--config", config(", sasl: {mechanism: scram-sha-512, username: u, password_file: "+missing+"}"), "--dry-run")
	if code == 0 || !strings.Contains(e, "kafka.sasl.password_file") {
		t.Errorf("unreadable password file: exit %d, stderr %q; want a refusal naming kafka.sasl.password_file", code, e)
	}
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, e, code := main("run", "--config", config(", sasl: {mechanism: plain, username: u, password_file: "+pw+"}"), "--dry-run")
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
