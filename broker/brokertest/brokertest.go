package brokertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/kafkaconn"
)

// Start starts a cluster for a test, closes it with t.Cleanup and returns
// it with a client configuration that bootstraps from it (add TLS, SASL or
// a ClientID as the test needs). Without a Logger the cluster is silent.
func Start(t testing.TB, opts broker.Options) (*broker.Cluster, kafkaconn.Config) {
	t.Helper()
	c, err := broker.Start(opts)
	if err != nil {
		t.Fatalf("start test broker: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, kafkaconn.Config{Brokers: c.Addrs()}
}

// StartSCRAMOverTLS starts a cluster (Start, with opts) that speaks TLS
// only, with a fresh PKI in a temporary directory (mutual: clients must
// present the PKI's client certificate), and admits the one user "svc"
// (password "pw") by SCRAM mechanism ("SCRAM-SHA-256" or
// "SCRAM-SHA-512"). It returns the cluster with the config of a client
// that trusts the CA, presents the client certificate when mutual, and
// logs in as svc.
func StartSCRAMOverTLS(t testing.TB, mechanism string, mutual bool, opts broker.Options) (*broker.Cluster, kafkaconn.Config) {
	t.Helper()
	pki := NewPKI(t, t.TempDir(), mutual)
	opts.TLS = pki.ServerTLS
	opts.SASL = []broker.SASLUser{{Mechanism: mechanism, User: "svc", Password: "pw"}}
	c, conn := Start(t, opts)
	conn.TLS = kafkaconn.TLSConfig{Enabled: true, CAFile: pki.CAFile}
	if mutual {
		conn.TLS.CertFile, conn.TLS.KeyFile = pki.ClientCertFile, pki.ClientKeyFile
	}
	conn.SASL = kafkaconn.SASLConfig{Mechanism: strings.ToLower(mechanism), Username: "svc", Password: "pw"}
	return c, conn
}

// PKI is a throwaway certificate authority with one server and one
// client certificate, written as PEM files for configs that name files.
type PKI struct {
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
	// ServerName is the DNS name in the server certificate ("localhost";
	// the certificate also covers 127.0.0.1).
	ServerName string
	// CAPool holds the CA certificate.
	CAPool *x509.CertPool
	// ServerTLS is a listener config presenting the server certificate.
	// When requireClientCert is set in NewPKI it also requires a client
	// certificate signed by the CA.
	ServerTLS *tls.Config
}

// NewPKI generates a CA, a server certificate for localhost/127.0.0.1
// and a client certificate (ECDSA P-256, valid for one hour) in dir.
func NewPKI(t testing.TB, dir string, requireClientCert bool) *PKI {
	t.Helper()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatalf("generate key: %v", err)
		}
		return k
	}
	serial := int64(0)
	tmpl := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn, Organization: []string{"dpsurv test"}},
			NotBefore:    now.Add(-time.Minute),
			NotAfter:     now.Add(time.Hour),
		}
	}
	caKey := newKey()
	caT := tmpl("dpsurv test CA")
	caT.IsCA = true
	caT.BasicConstraintsValid = true
	caT.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("create CA certificate: %v", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("parse CA certificate: %v", err)
	}
	issue := func(cn string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		c := tmpl(cn)
		c.KeyUsage = x509.KeyUsageDigitalSignature
		c.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		if usage == x509.ExtKeyUsageServerAuth {
			c.DNSNames = []string{"localhost"}
			c.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, c, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatalf("create %s certificate: %v", cn, err)
		}
		return der, k
	}
	srvDER, srvKey := issue("localhost", x509.ExtKeyUsageServerAuth)
	cliDER, cliKey := issue("dpsurv-client", x509.ExtKeyUsageClientAuth)

	p := &PKI{
		CAFile:         filepath.Join(dir, "ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
		ServerName:     "localhost",
		CAPool:         x509.NewCertPool(),
	}
	p.CAPool.AddCert(caCert)
	writePEM := func(path, typ string, der []byte) {
		b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatalf("marshal key: %v", err)
		}
		return b
	}
	writePEM(p.CAFile, "CERTIFICATE", caDER)
	writePEM(p.ServerCertFile, "CERTIFICATE", srvDER)
	writePEM(p.ServerKeyFile, "PRIVATE KEY", keyDER(srvKey))
	writePEM(p.ClientCertFile, "CERTIFICATE", cliDER)
	writePEM(p.ClientKeyFile, "PRIVATE KEY", keyDER(cliKey))

	srvPair, err := tls.LoadX509KeyPair(p.ServerCertFile, p.ServerKeyFile)
	if err != nil {
		t.Fatalf("load server key pair: %v", err)
	}
	p.ServerTLS = &tls.Config{
		Certificates: []tls.Certificate{srvPair},
		MinVersion:   tls.VersionTLS12,
	}
	if requireClientCert {
		p.ServerTLS.ClientAuth = tls.RequireAndVerifyClientCert
		p.ServerTLS.ClientCAs = p.CAPool
	}
	return p
}

// RunWithLeakCheck runs the tests of a package (call it from TestMain) and
// then fails the run if goroutines from kafka-go, kfake or dpsurv are still
// alive after a grace period: every reader, writer, transport and cluster
// the tests opened must have been closed.
func RunWithLeakCheck(m *testing.M) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	var leaked []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaked = interestingGoroutines()
		if len(leaked) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "leak check: %d goroutine(s) still running after the tests:\n\n%s\n",
			len(leaked), strings.Join(leaked, "\n\n"))
		return 1
	}
	return 0
}

func interestingGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "brokertest.interestingGoroutines") || strings.Contains(g, "testing.(*M)") {
			continue
		}
		if strings.Contains(g, "segmentio/kafka-go") || strings.Contains(g, "franz-go/pkg/kfake") ||
			strings.Contains(g, "github.com/dpsurv/dpsurv/") {
			out = append(out, g)
		}
	}
	return out
}
