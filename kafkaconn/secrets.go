package kafkaconn

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"
)

// Limits of the files the Kafka connection reads (issue 21: a CA file of
// /dev/zero used to pass `--dry-run` and exhaust memory at the first dial).
const (
	// MaxCertFileBytes bounds a CA bundle or a client certificate chain.
	MaxCertFileBytes = 1 << 20
	// MaxKeyFileBytes bounds a client private key (PEM).
	MaxKeyFileBytes = 64 << 10
	// MaxPasswordFileBytes bounds a SASL password file.
	MaxPasswordFileBytes = 4096
)

// readPublicFile reads a CA bundle or a certificate: public data, but one
// that decides whom the service trusts, so it must be a regular file of at
// most MaxCertFileBytes that neither its group nor others may write.
func readPublicFile(path string) ([]byte, error) {
	return ReadRegularFile(path, MaxCertFileBytes, func(st os.FileInfo) error {
		if perm := st.Mode().Perm(); perm&0o022 != 0 {
			return fmt.Errorf("%s has mode %04o: others may change whom the service trusts (chmod go-w it)", path, perm)
		}
		return nil
	})
}

// keyPair reads the client certificate (a public file) and its private key
// (a secret: owner-only, or group-readable when allowed; at most
// MaxKeyFileBytes), and parses them.
func (t TLSConfig) keyPair() (tls.Certificate, error) {
	if t.CertFile == "" || t.KeyFile == "" {
		return tls.Certificate{}, fmt.Errorf("kafka.tls.cert_file/key_file: set both or neither")
	}
	cert, err := readPublicFile(t.CertFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kafka.tls.cert_file: %w", err)
	}
	key, err := ReadSecretFile(t.KeyFile, MaxKeyFileBytes, t.AllowGroupReadableKeyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kafka.tls.key_file: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kafka.tls.cert_file/key_file: %w", err)
	}
	return pair, nil
}

// CheckFiles reads and parses every file the connection needs (the TLS CA,
// client certificate and key, the SASL password) with the checks the
// service applies when it dials: a regular file, bounded in size, a secret
// readable by its owner only (or its group when allowed), a certificate
// writable by its owner only. `dpsurv run --dry-run` calls it, and `dpsurv
// run` before it starts, so that a file that cannot work is refused at
// once, naming its field.
func (c Config) CheckFiles() error {
	if _, err := c.tlsConfig(); err != nil {
		return err
	}
	if strings.ToLower(c.SASL.Mechanism) != "" && c.SASL.Password == "" {
		if _, err := c.password(); err != nil {
			return err
		}
	}
	return nil
}

// Warnings lists configurations that work but expose something: SASL
// PLAIN without TLS sends the password in clear text.
func (c Config) Warnings() []string {
	var w []string
	if strings.ToLower(c.SASL.Mechanism) == MechanismPlain && !c.TLS.Enabled {
		w = append(w, "kafka.sasl.mechanism: plain without kafka.tls.enabled sends the password to the brokers in clear text; enable TLS or use scram-sha-512")
	}
	return w
}
