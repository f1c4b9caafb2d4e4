package ops_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops/harness"
)

// TestOpsServiceTLSAndSASL runs the whole service against the embedded
// broker with mutual TLS (custom CA, client certificate) and SASL switched
// on: with good credentials records flow end to end for every mechanism;
// with a wrong password the service stays up and not ready, says that
// authentication failed without printing a password, does not exit (no
// crash loop), and stops cleanly when cancelled.
func TestOpsServiceTLSAndSASL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := brokertest.NewPKI(t, dir, true)
	const (
		pass512 = "ops-s512-correct-horse"
		pass256 = "ops-s256-battery-staple"
		passPl  = "ops-plain-tr0ub4dor"
		wrong   = "ops-wrong-password-q7x"
	)
	cl, _ := brokertest.Start(t, broker.Options{TLS: pki.ServerTLS, SASL: []broker.SASLUser{
		{Mechanism: "SCRAM-SHA-512", User: "svc512", Password: pass512},
		{Mechanism: "SCRAM-SHA-256", User: "svc256", Password: pass256},
		{Mechanism: "PLAIN", User: "svcplain", Password: passPl},
	}})
	tlsCfg := kafkaconn.TLSConfig{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile, ServerName: pki.ServerName}
	secrets := []string{pass512, pass256, passPl, wrong}

	tests := []struct {
		name string
		sasl kafkaconn.SASLConfig
		ok   bool
	}{
		{"scram-sha-512", kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: "svc512", Password: pass512}, true},
		{"plain", kafkaconn.SASLConfig{Mechanism: "plain", Username: "svcplain", Password: passPl}, true},
		{"scram-sha-256", kafkaconn.SASLConfig{Mechanism: "scram-sha-256", Username: "svc256", Password: pass256}, true},
		{"scram-sha-512 wrong password", kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: "svc512", Password: wrong}, false},
		{"plain wrong password", kafkaconn.SASLConfig{Mechanism: "plain", Username: "svcplain", Password: wrong}, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			t.Cleanup(cancel)
			conn := kafkaconn.Config{Brokers: cl.Addrs(), ClientID: "ops-sec", TLS: tlsCfg, SASL: tc.sasl}
			group := "ops-sec-" + strings.ReplaceAll(tc.name, " ", "-")
			cfg := opsConfig(conn, group)
			cfg.Input.Topic = "ops.sec.in." + string(rune('a'+i))
			cfg.Output.SanitizedTopic = "ops.sec.out." + string(rune('a'+i))
			cfg.HTTP.Listen = opsFreeAddr(t)
			logs := &apptest.Logs{}
			svc := &app.Service{Config: cfg, Key: opsKey, Log: logs.Logger()}
			stop, done := opsRunService(t, ctx, svc)
			get := func(path string) (int, string) {
				resp, err := http.Get("http://" + cfg.HTTP.Listen + path)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}

			if tc.ok {
				if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{cfg.Input.Topic: 4}, nil); err != nil {
					t.Fatalf("create the input topic over TLS+SASL: %v", err)
				}
				in := opsNewInput(t, cfg, opsKey, 600, 30, uint64(10+i), "sec-"+tc.name)
				if err := harness.Produce(ctx, conn, cfg.Input.Topic, in.msgs, nil); err != nil {
					t.Fatalf("produce over TLS+SASL: %v", err)
				}
				out := opsCollectExact(t, ctx, conn, cfg.Output.SanitizedTopic, group+"-reader", in.want)
				if code, _ := get("/readyz"); code != http.StatusOK {
					t.Errorf("/readyz %d while consuming, want 200", code)
				}
				t.Logf("%d records in %d messages through TLS+SASL(%s)", len(in.want), out.Distinct, tc.sasl.Mechanism)
				if err := stop(); err != nil {
					t.Fatalf("service: %v", err)
				}
			} else {
				up := harness.WaitFor(ctx, 10*time.Second, func() bool {
					resp, err := http.Get("http://" + cfg.HTTP.Listen + "/healthz")
					if err == nil {
						resp.Body.Close()
					}
					return err == nil
				})
				if !up {
					t.Fatal("health endpoint never came up")
				}
				if !harness.WaitFor(ctx, 15*time.Second, func() bool {
					return strings.Contains(logs.String(), "kafka authentication failed")
				}) {
					t.Fatalf("log never says authentication failed; log:\n%s", logs.String())
				}
				// Still alive, not ready, after retrying with backoff: the
				// wait is for the second logged attempt (not a fixed sleep,
				// which a loaded machine may fill with a single attempt).
				const retrying = "kafka connection failed; not ready, retrying"
				if !harness.WaitFor(ctx, 60*time.Second, func() bool {
					return strings.Count(logs.String(), retrying) >= 2
				}) {
					t.Fatalf("fewer than 2 connection attempts logged in 60 s; log:\n%s", logs.String())
				}
				select {
				case <-done:
					t.Fatal("service exited on a wrong password (crash loop)")
				default:
				}
				if code, _ := get("/healthz"); code != http.StatusOK {
					t.Errorf("/healthz %d, want 200 (alive)", code)
				}
				if code, body := get("/readyz"); code != http.StatusServiceUnavailable {
					t.Errorf("/readyz %d %q, want 503", code, body)
				}
				if _, m := get("/metrics"); !strings.Contains(m, "dpsurv_ready 0") {
					t.Errorf("/metrics lacks dpsurv_ready 0")
				}
				start := time.Now()
				if err := stop(); err != nil {
					t.Fatalf("cancelled service returned %v, want nil", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("stopping took %v", d)
				}
			}
			all := logs.String()
			for _, s := range secrets {
				if strings.Contains(all, s) {
					t.Errorf("logs contain a password")
				}
			}
		})
	}
}
