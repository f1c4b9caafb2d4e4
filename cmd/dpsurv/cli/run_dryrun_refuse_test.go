package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd/configtest"
)

// Issue 21, defect 6: configuration that validates but cannot work is
// refused by `dpsurv run --dry-run`, naming the field: an aggregator
// epsilon the samplers cannot draw, a time_max below the time unit's
// resolution, and every Kafka secret or certificate file with the PRF
// key's type, size and mode checks. SASL PLAIN without TLS is warned in
// the dry-run output. On the code before, every case below passed.
func TestRunDryRunRefusesWhatCannotWork(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	pki := brokertest.NewPKI(t, dir, false)
	ca, cert, tlsKey := pki.CAFile, pki.ClientCertFile, pki.ClientKeyFile
	looseKey := brokertest.NewPKI(t, t.TempDir(), false).ClientKeyFile
	if err := os.Chmod(looseKey, 0o644); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("secret\n"), 0o600)
	pwLoose := filepath.Join(dir, "pw-loose")
	os.WriteFile(pwLoose, []byte("secret\n"), 0o644)
	os.Chmod(pwLoose, 0o644)
	big := filepath.Join(dir, "big.crt")
	os.WriteFile(big, make([]byte, 2<<20), 0o644)
	cfg := func(kafka, timeMax, eps string) string {
		return configtest.Config{
			Key:      key,
			Kafka:    kafka,
			Schema:   "{time_max: " + timeMax + ", cohorts: [a, b]}",
			FitTopic: true,
			More: "aggregators:\n  - {name: km, kind: km, epsilon: " + eps + ", window: {size: 1m}}\n" +
				"ledger: {file: " + filepath.Join(dir, "ledger") + ", budget: {stream: 100}}\n",
		}.YAML()
	}
	tls := func(extra string) string { return "tls: {enabled: true, " + extra + "}" }
	cases := []struct {
		name, config, want string
	}{
		{"epsilon 1e-300", cfg("", "100", "1e-300"), "epsilon"},
		{"epsilon 1e308", cfg("", "100", "1e308"), "epsilon"},
		{"time_max 0.5", cfg("", "0.5", "1"), "schema.time_max"},
		{"CA /dev/zero", cfg(tls("ca_file: /dev/zero"), "100", "1"), "kafka.tls.ca_file"},
		{"CA of 2 MiB", cfg(tls("ca_file: "+big), "100", "1"), "kafka.tls.ca_file"},
		{"TLS key 0644", cfg(tls("cert_file: "+cert+", key_file: "+looseKey), "100", "1"), "kafka.tls.key_file"},
		{"TLS key /dev/zero", cfg(tls("cert_file: "+cert+", key_file: /dev/zero"), "100", "1"), "kafka.tls.key_file"},
		{"password 0644", cfg("sasl: {mechanism: scram-sha-512, username: u, password_file: "+pwLoose+"}", "100", "1"), "kafka.sasl.password_file"},
		{"password /dev/zero", cfg("sasl: {mechanism: scram-sha-512, username: u, password_file: /dev/zero}", "100", "1"), "kafka.sasl.password_file"},
	}
	p := filepath.Join(dir, "c.yaml")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			configtest.Write(t, p, c.config)
			o, e, code := run(t, "run", "--config", p, "--dry-run")
			if code == 0 || !strings.Contains(e, c.want) {
				t.Fatalf("exit %d, want a refusal naming %s\nstdout %s\nstderr %s", code, c.want, o, e)
			}
		})
	}
	t.Run("good TLS and SASL files pass", func(t *testing.T) {
		configtest.Write(t, p, cfg(tls("ca_file: "+ca+", cert_file: "+cert+", key_file: "+tlsKey)+", sasl: {mechanism: scram-sha-512, username: u, password_file: "+pw+"}", "100", "1"))
		o, e, code := run(t, "run", "--config", p, "--dry-run")
		if code != 0 || !strings.Contains(o, `"config":"ok"`) || strings.Contains(o, "warnings") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, o, e)
		}
	})
	t.Run("SASL PLAIN without TLS is warned", func(t *testing.T) {
		configtest.Write(t, p, cfg("sasl: {mechanism: plain, username: u, password_file: "+pw+"}", "100", "1"))
		o, e, code := run(t, "run", "--config", p, "--dry-run")
		if code != 0 || !strings.Contains(o, `"warnings":["kafka.sasl.mechanism: plain without kafka.tls.enabled`) {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, o, e)
		}
	})
}
