package kafkaconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// DefaultClientID is used when Config.ClientID is empty.
const DefaultClientID = "dpsurv"

// DialTimeout bounds establishing one connection (TCP + TLS + SASL).
const DialTimeout = 10 * time.Second

// SASL mechanism names accepted in SASLConfig.Mechanism.
const (
	MechanismPlain       = "plain"
	MechanismSCRAMSHA256 = "scram-sha-256"
	MechanismSCRAMSHA512 = "scram-sha-512"
)

// TLSConfig configures TLS to the brokers.
type TLSConfig struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
	// AllowGroupReadableKeyFile accepts a client key file its group may
	// read (a Kubernetes Secret volume with fsGroup, mode 0440); by
	// default only the owner may read it, as for the PRF key.
	AllowGroupReadableKeyFile bool `yaml:"allow_group_readable_key_file"`
}

// SASLConfig configures SASL authentication.
type SASLConfig struct {
	// Mechanism is "", plain, scram-sha-256 or scram-sha-512
	// (case-insensitive); "" disables SASL.
	Mechanism    string `yaml:"mechanism"`
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
	// AllowGroupReadable accepts a password file its group may read (a
	// Kubernetes Secret volume with fsGroup, mode 0440); by default only
	// the owner may read it.
	AllowGroupReadable bool `yaml:"allow_group_readable_password_file"`
	// Password overrides PasswordFile; set programmatically (tests).
	Password string `yaml:"-"`
	// OAuth configures mechanism oauthbearer (oauth.go).
	OAuth OAuthConfig `yaml:"oauth"`
}

// Config is the connection configuration for every Kafka client.
type Config struct {
	Brokers  []string   `yaml:"brokers"`
	ClientID string     `yaml:"client_id"`
	TLS      TLSConfig  `yaml:"tls"`
	SASL     SASLConfig `yaml:"sasl"`
}

// Validate checks the configuration without touching files or the network.
func (c Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("kafka.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(c.Brokers) == 0 {
		add("brokers", "at least one broker address is required")
	}
	for i, b := range c.Brokers {
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			add(fmt.Sprintf("brokers[%d]", i), "%q is not host:port", b)
			continue
		}
		if host == "" {
			add(fmt.Sprintf("brokers[%d]", i), "%q has an empty host", b)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			add(fmt.Sprintf("brokers[%d]", i), "%q has an invalid port", b)
		}
	}
	t := c.TLS
	if !t.Enabled {
		for _, f := range []struct{ name, val string }{
			{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}, {"server_name", t.ServerName},
		} {
			if f.val != "" {
				add("tls."+f.name, "set but kafka.tls.enabled is false")
			}
		}
		if t.InsecureSkipVerify {
			add("tls.insecure_skip_verify", "set but kafka.tls.enabled is false")
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		if t.CertFile == "" {
			add("tls.cert_file", "required when key_file is set")
		} else {
			add("tls.key_file", "required when cert_file is set")
		}
	}
	s := c.SASL
	mech := strings.ToLower(s.Mechanism)
	switch mech {
	case "":
		if s.Username != "" || s.PasswordFile != "" {
			add("sasl.mechanism", "required when username or password_file is set (plain, scram-sha-256 or scram-sha-512)")
		}
		if s.OAuth != (OAuthConfig{}) {
			add("sasl.mechanism", "required when oauth is set (oauthbearer)")
		}
	case MechanismOAuthBearer:
		if s.Username != "" || s.PasswordFile != "" {
			add("sasl.username", "not used with mechanism oauthbearer (set sasl.oauth.client_id and client_secret_file)")
		}
		s.OAuth.validate(add)
	case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		if s.Username == "" {
			add("sasl.username", "required when mechanism is set")
		}
		if s.PasswordFile == "" && s.Password == "" {
			add("sasl.password_file", "required when mechanism is set")
		}
		if s.OAuth != (OAuthConfig{}) {
			add("sasl.oauth", "only with mechanism oauthbearer")
		}
	default:
		add("sasl.mechanism", "unknown mechanism %q (want plain, scram-sha-256, scram-sha-512 or oauthbearer)", s.Mechanism)
	}
	return errors.Join(errs...)
}

func (c Config) clientID() string {
	if c.ClientID == "" {
		return DefaultClientID
	}
	return c.ClientID
}

// tlsConfig builds the client TLS config, nil when TLS is disabled.
func (c Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if !t.Enabled {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // explicit opt-in, documented as insecure
	}
	if t.CAFile != "" {
		pem, err := readPublicFile(t.CAFile) // secrets.go
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka.tls.ca_file: no PEM certificate found in %s", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		pair, err := t.keyPair() // secrets.go
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func (c Config) password() (string, error) {
	if c.SASL.Password != "" {
		return c.SASL.Password, nil
	}
	if c.SASL.PasswordFile == "" {
		return "", errors.New("kafka.sasl.password_file: required when mechanism is set")
	}
	return readSecretLine("kafka.sasl.password_file", c.SASL.PasswordFile, MaxPasswordFileBytes, c.SASL.AllowGroupReadable)
}

// mechanism builds the SASL mechanism, nil when SASL is disabled.
func (c Config) mechanism() (sasl.Mechanism, error) {
	mech := strings.ToLower(c.SASL.Mechanism)
	if mech == "" {
		return nil, nil
	}
	if mech == MechanismOAuthBearer {
		ts, err := c.tokenSource()
		if err != nil {
			return nil, err
		}
		return oauthMechanism{ts: ts}, nil
	}
	if c.SASL.Username == "" {
		return nil, errors.New("kafka.sasl.username: required when mechanism is set")
	}
	pass, err := c.password()
	if err != nil {
		return nil, err
	}
	switch mech {
	case MechanismPlain:
		return plain.Mechanism{Username: c.SASL.Username, Password: pass}, nil
	case MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		algo := scram.SHA256
		if mech == MechanismSCRAMSHA512 {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, c.SASL.Username, pass)
		if err != nil {
			return nil, fmt.Errorf("kafka.sasl: %w", err)
		}
		return m, nil
	default:
		return nil, fmt.Errorf("kafka.sasl.mechanism: unknown mechanism %q", c.SASL.Mechanism)
	}
}

// security builds TLS and SASL once for a dialer or transport.
func (c Config) security() (*tls.Config, sasl.Mechanism, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	m, err := c.mechanism()
	if err != nil {
		return nil, nil, err
	}
	return tc, m, nil
}

// Dialer returns a kafka-go Dialer with TLS and SASL applied, for readers,
// consumer groups and direct connections.
func (c Config) Dialer() (*kafka.Dialer, error) {
	tc, m, err := c.security()
	if err != nil {
		return nil, fmt.Errorf("kafka dialer: %w", err)
	}
	return &kafka.Dialer{
		ClientID:      c.clientID(),
		Timeout:       DialTimeout,
		DualStack:     true,
		KeepAlive:     30 * time.Second,
		TLS:           tc,
		SASLMechanism: m,
	}, nil
}

// Transport returns a NEW kafka-go Transport with TLS and SASL applied, for
// exactly one writer or admin client. Close it with CloseIdleConnections.
func (c Config) Transport() (*kafka.Transport, error) {
	tc, m, err := c.security()
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	d := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	return &kafka.Transport{
		Dial:        d.DialContext,
		DialTimeout: DialTimeout,
		IdleTimeout: 30 * time.Second,
		MetadataTTL: 6 * time.Second,
		ClientID:    c.clientID(),
		TLS:         tc,
		SASL:        m,
	}, nil
}
