package kafkaconn_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/kafkaconn"
)

func TestValidate(t *testing.T) {
	ok := kafkaconn.Config{Brokers: []string{"127.0.0.1:9092"}}
	tests := []struct {
		name string
		mod  func(c *kafkaconn.Config)
		want []string // substrings of the error; none = valid
	}{
		{"minimal", func(*kafkaconn.Config) {}, nil},
		{"no brokers", func(c *kafkaconn.Config) { c.Brokers = nil }, []string{"kafka.brokers: at least one"}},
		{"broker without port", func(c *kafkaconn.Config) { c.Brokers = []string{"localhost"} }, []string{"kafka.brokers[0]: \"localhost\" is not host:port"}},
		{"broker bad port", func(c *kafkaconn.Config) { c.Brokers = []string{"a:1", "b:0"} }, []string{"kafka.brokers[1]: \"b:0\" has an invalid port"}},
		{"broker empty host", func(c *kafkaconn.Config) { c.Brokers = []string{":9092"} }, []string{"kafka.brokers[0]: \":9092\" has an empty host"}},
		{"sasl no password", func(c *kafkaconn.Config) { c.SASL = kafkaconn.SASLConfig{Mechanism: "plain", Username: "u"} },
			[]string{"kafka.sasl.password_file: required when mechanism is set"}},
		{"sasl no username", func(c *kafkaconn.Config) {
			c.SASL = kafkaconn.SASLConfig{Mechanism: "scram-sha-512", PasswordFile: "/x"}
		}, []string{"kafka.sasl.username: required when mechanism is set"}},
		{"sasl programmatic password", func(c *kafkaconn.Config) {
			c.SASL = kafkaconn.SASLConfig{Mechanism: "SCRAM-SHA-256", Username: "u", Password: "p"}
		}, nil},
		{"sasl unknown mechanism", func(c *kafkaconn.Config) {
			c.SASL = kafkaconn.SASLConfig{Mechanism: "gssapi", Username: "u", PasswordFile: "/x"}
		}, []string{"kafka.sasl.mechanism: unknown mechanism \"gssapi\""}},
		{"sasl user without mechanism", func(c *kafkaconn.Config) { c.SASL.Username = "u" }, []string{"kafka.sasl.mechanism: required"}},
		{"tls fields while disabled", func(c *kafkaconn.Config) { c.TLS.CAFile = "/ca.pem"; c.TLS.InsecureSkipVerify = true },
			[]string{"kafka.tls.ca_file: set but kafka.tls.enabled is false", "kafka.tls.insecure_skip_verify: set but"}},
		{"tls cert without key", func(c *kafkaconn.Config) { c.TLS = kafkaconn.TLSConfig{Enabled: true, CertFile: "/c.pem"} },
			[]string{"kafka.tls.key_file: required when cert_file is set"}},
		{"tls key without cert", func(c *kafkaconn.Config) { c.TLS = kafkaconn.TLSConfig{Enabled: true, KeyFile: "/k.pem"} },
			[]string{"kafka.tls.cert_file: required when key_file is set"}},
		{"tls full", func(c *kafkaconn.Config) {
			c.TLS = kafkaconn.TLSConfig{Enabled: true, CAFile: "/ca", CertFile: "/c", KeyFile: "/k", ServerName: "kafka"}
		}, nil},
		{"several errors reported together", func(c *kafkaconn.Config) { c.Brokers = nil; c.SASL.Mechanism = "plain" },
			[]string{"kafka.brokers:", "kafka.sasl.username:", "kafka.sasl.password_file:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			c.Brokers = append([]string(nil), ok.Brokers...)
			tc.mod(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDialerAndTransportFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	notPEM := filepath.Join(dir, "notpem")
	for _, f := range []struct{ path, body string }{{empty, "\n"}, {notPEM, "hello"}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing")
	base := kafkaconn.Config{Brokers: []string{"127.0.0.1:9"}}
	tests := []struct {
		name string
		mod  func(c *kafkaconn.Config)
		want string
	}{
		{"invalid config", func(c *kafkaconn.Config) { c.Brokers = nil }, "kafka.brokers:"},
		{"missing password file", func(c *kafkaconn.Config) {
			c.SASL = kafkaconn.SASLConfig{Mechanism: "plain", Username: "u", PasswordFile: missing}
		}, "kafka.sasl.password_file:"},
		{"empty password file", func(c *kafkaconn.Config) {
			c.SASL = kafkaconn.SASLConfig{Mechanism: "plain", Username: "u", PasswordFile: empty}
		}, "kafka.sasl.password_file: " + empty + " is empty"},
		{"missing CA", func(c *kafkaconn.Config) { c.TLS = kafkaconn.TLSConfig{Enabled: true, CAFile: missing} }, "kafka.tls.ca_file:"},
		{"CA not PEM", func(c *kafkaconn.Config) { c.TLS = kafkaconn.TLSConfig{Enabled: true, CAFile: notPEM} }, "kafka.tls.ca_file: no PEM certificate"},
		{"bad key pair", func(c *kafkaconn.Config) {
			c.TLS = kafkaconn.TLSConfig{Enabled: true, CertFile: notPEM, KeyFile: notPEM}
		}, "kafka.tls.cert_file/key_file:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			if _, err := c.Dialer(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dialer() error = %v, want it to contain %q", err, tc.want)
			}
			if _, err := c.Transport(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Transport() error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestTransportIsNewEachCall(t *testing.T) {
	c := kafkaconn.Config{Brokers: []string{"127.0.0.1:9092"}, ClientID: "x"}
	a, err := c.Transport()
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Transport()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("Transport returned the same transport twice")
	}
	if a.ClientID != "x" {
		t.Errorf("ClientID = %q, want x", a.ClientID)
	}
	d, err := (kafkaconn.Config{Brokers: []string{"h:1"}}).Dialer()
	if err != nil {
		t.Fatal(err)
	}
	if d.ClientID != kafkaconn.DefaultClientID || d.TLS != nil || d.SASLMechanism != nil {
		t.Errorf("plain dialer = %+v, want default client id, no TLS, no SASL", d)
	}
}
