package kafkaconn_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
)

func TestCheckConnectionSASLAndTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := brokertest.NewPKI(t, dir, true)
	users := []broker.SASLUser{
		{Mechanism: "PLAIN", User: "plainuser", Password: "plain-secret"},
		{Mechanism: "SCRAM-SHA-256", User: "scram256", Password: "s256-secret"},
		{Mechanism: "SCRAM-SHA-512", User: "scram512", Password: "s512-secret"},
	}
	saslOnly, _ := brokertest.Start(t, broker.Options{SASL: users})
	tlsSASL, _ := brokertest.Start(t, broker.Options{SASL: users, TLS: pki.ServerTLS})
	tlsOnly, _ := brokertest.Start(t, broker.Options{TLS: pki.ServerTLS})

	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("s512-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goodTLS := kafkaconn.TLSConfig{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile, ServerName: pki.ServerName}

	tests := []struct {
		name    string
		cluster *broker.Cluster
		tls     kafkaconn.TLSConfig
		sasl    kafkaconn.SASLConfig
		wantErr error // nil: success
	}{
		{"plain ok", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "plain", Username: "plainuser", Password: "plain-secret"}, nil},
		{"scram-256 ok", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "scram-sha-256", Username: "scram256", Password: "s256-secret"}, nil},
		{"scram-512 ok from file", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "SCRAM-SHA-512", Username: "scram512", PasswordFile: pwFile}, nil},
		{"plain wrong password", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "plain", Username: "plainuser", Password: "nope"}, kafkaconn.ErrAuth},
		{"scram-256 wrong password", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "scram-sha-256", Username: "scram256", Password: "nope"}, kafkaconn.ErrAuth},
		{"scram-512 wrong password", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: "scram512", Password: "nope"}, kafkaconn.ErrAuth},
		{"scram-512 unknown user", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: "nobody", Password: "x"}, kafkaconn.ErrAuth},
		{"wrong mechanism for user", saslOnly, kafkaconn.TLSConfig{}, kafkaconn.SASLConfig{Mechanism: "scram-sha-256", Username: "plainuser", Password: "plain-secret"}, kafkaconn.ErrAuth},
		{"tls+plain ok", tlsSASL, goodTLS, kafkaconn.SASLConfig{Mechanism: "plain", Username: "plainuser", Password: "plain-secret"}, nil},
		{"tls+scram-512 ok", tlsSASL, goodTLS, kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: "scram512", Password: "s512-secret"}, nil},
		{"tls+scram-256 wrong password", tlsSASL, goodTLS, kafkaconn.SASLConfig{Mechanism: "scram-sha-256", Username: "scram256", Password: "bad"}, kafkaconn.ErrAuth},
		{"mutual tls ok", tlsOnly, goodTLS, kafkaconn.SASLConfig{}, nil},
		{"tls unknown CA", tlsOnly, kafkaconn.TLSConfig{Enabled: true, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile}, kafkaconn.SASLConfig{}, kafkaconn.ErrTLS},
		{"tls wrong server name", tlsOnly, kafkaconn.TLSConfig{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile, ServerName: "kafka.example.com"}, kafkaconn.SASLConfig{}, kafkaconn.ErrTLS},
		{"tls without client cert", tlsOnly, kafkaconn.TLSConfig{Enabled: true, CAFile: pki.CAFile}, kafkaconn.SASLConfig{}, kafkaconn.ErrTLS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			t.Cleanup(cancel)
			cfg := kafkaconn.Config{Brokers: tc.cluster.Addrs(), TLS: tc.tls, SASL: tc.sasl}
			start := time.Now()
			err := kafkaconn.CheckConnection(ctx, cfg)
			took := time.Since(start)
			if took > 10*time.Second {
				t.Errorf("CheckConnection took %v, want a prompt answer", took)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckConnection: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("CheckConnection error = %v, want %v", err, tc.wantErr)
			}
			t.Logf("error: %v", err)
			if tc.wantErr == kafkaconn.ErrAuth && !strings.Contains(err.Error(), "kafka authentication failed: ") {
				t.Errorf("error %q does not say authentication failed", err)
			}
			for _, secret := range []string{"plain-secret", "s256-secret", "s512-secret", "nope"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error leaks the password: %q", err)
				}
			}
		})
	}
}

func TestCheckConnectionPlaintextToSASLBroker(t *testing.T) {
	t.Parallel()
	c, _ := brokertest.Start(t, broker.Options{SASL: []broker.SASLUser{{Mechanism: "PLAIN", User: "u", Password: "p"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	err := kafkaconn.CheckConnection(ctx, kafkaconn.Config{Brokers: c.Addrs()})
	if err == nil {
		t.Fatal("unauthenticated connection to a SASL broker succeeded")
	}
	t.Logf("error: %v", err)
}

func TestCheckConnectionUnreachableAndPlaintextToTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := brokertest.NewPKI(t, dir, false)
	tlsOnly, _ := brokertest.Start(t, broker.Options{TLS: pki.ServerTLS})
	closed, _ := brokertest.Start(t, broker.Options{})
	closedAddrs := closed.Addrs()
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  kafkaconn.Config
	}{
		{"nothing listening", kafkaconn.Config{Brokers: closedAddrs}},
		{"plaintext to tls broker", kafkaconn.Config{Brokers: tlsOnly.Addrs()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			t.Cleanup(cancel)
			start := time.Now()
			err := kafkaconn.CheckConnection(ctx, tc.cfg)
			if err == nil {
				t.Fatal("CheckConnection succeeded")
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("CheckConnection took %v", d)
			}
			t.Logf("error: %v", err)
		})
	}
	// TLS without client certificate is fine when the server does not require one.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := kafkaconn.CheckConnection(ctx, kafkaconn.Config{Brokers: tlsOnly.Addrs(),
		TLS: kafkaconn.TLSConfig{Enabled: true, CAFile: pki.CAFile}}); err != nil {
		t.Fatalf("server-auth TLS: %v", err)
	}
}

func TestEnsureTopics(t *testing.T) {
	t.Parallel()
	c, cfg := brokertest.StartSCRAMOverTLS(t, "SCRAM-SHA-512", false, broker.Options{Topics: map[string]int{"existing": 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	topics := map[string]int{"in": 3, "releases": 1, "existing": 7, "default-parts": 0}
	compacted := map[string]bool{"releases": true}
	for round := 0; round < 2; round++ { // idempotent
		if err := kafkaconn.EnsureTopics(ctx, cfg, topics, compacted); err != nil {
			t.Fatalf("EnsureTopics round %d: %v", round, err)
		}
	}
	kc := c.Kfake()
	for name, want := range map[string]int{"in": 3, "releases": 1, "existing": 2, "default-parts": broker.DefaultPartitions} {
		if got := len(kc.PartitionInfos(name)); got != want {
			t.Errorf("topic %s has %d partitions, want %d", name, got, want)
		}
	}
	if v := kc.TopicInfo("releases").Configs["cleanup.policy"]; v == nil || *v != "compact" {
		t.Errorf("releases cleanup.policy = %v, want compact", v)
	}
	if v := kc.TopicInfo("in").Configs["cleanup.policy"]; v != nil && *v == "compact" {
		t.Errorf("in is compacted, want default policy")
	}

	bad := cfg
	bad.SASL.Password = "wrong"
	err := kafkaconn.EnsureTopics(ctx, bad, map[string]int{"x": 1}, nil)
	if err == nil {
		t.Fatal("EnsureTopics with a wrong password succeeded")
	}
	if !errors.Is(err, kafkaconn.ErrAuth) {
		t.Errorf("EnsureTopics error = %v, want ErrAuth", err)
	}
	if len(kc.PartitionInfos("x")) != 0 {
		t.Error("topic x was created with a wrong password")
	}
	t.Logf("wrong password: %v", err)
}

// TestCheckConnectionStopsWhenCancelled: a broker address that accepts the
// connection and never answers holds the metadata request until the
// deadline; cancelling the context (the service stopping) must end the
// check at once (it had waited for the deadline: `dpsurv run` took 12 s to
// stop on SIGTERM against such an address).
func TestCheckConnectionStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// read the request's size: the client has sent a request,
			// which is held open and never answered
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				c.Close()
				continue
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- kafkaconn.CheckConnection(ctx, kafkaconn.Config{Brokers: []string{ln.Addr().String()}})
	}()
	select {
	case c := <-accepted:
		accepted <- c // keep it for the cleanup
	case <-time.After(time.Minute):
		t.Fatal("the check never sent a request")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("CheckConnection still waiting a minute after its context was cancelled")
	}
}
