package kafkaconn_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
)

// issuer is a local OIDC provider: a client-credentials token endpoint
// that signs ES256 JWTs, and the checks a broker makes of them.
type issuer struct {
	srv      *httptest.Server
	key      *ecdsa.PrivateKey
	id, sec  string
	ttl      time.Duration
	issued   atomic.Int32
	audience string
	mu       sync.Mutex
	times    []time.Time // when each token was issued
}

// testClock is a clock that moves only when told to.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *testClock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// issuedAt returns when each token was issued.
func (is *issuer) issuedAt() []time.Time {
	is.mu.Lock()
	defer is.mu.Unlock()
	return slices.Clone(is.times)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func newIssuer(t *testing.T, clientID, secret string, ttl time.Duration) *issuer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: k, id: clientID, sec: secret, ttl: ttl, audience: "kafka"}
	is.srv = httptest.NewServer(http.HandlerFunc(is.token))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) token(w http.ResponseWriter, r *http.Request) {
	id, sec, ok := r.BasicAuth()
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	if !ok || id != is.id || sec != is.sec {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client","error_description":"bad client credentials"}`)
		return
	}
	now := time.Now()
	is.mu.Lock()
	is.times = append(is.times, now)
	is.mu.Unlock()
	jwt := is.sign(map[string]any{"iss": is.srv.URL, "sub": id, "aud": is.audience, "scope": r.PostForm.Get("scope"),
		"iat": now.Unix(), "exp": now.Add(is.ttl).Unix(), "jti": fmt.Sprint(is.issued.Add(1))})
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": jwt, "token_type": "Bearer", "expires_in": is.ttl.Seconds()})
}

func (is *issuer) sign(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT"})
	c, _ := json.Marshal(claims)
	in := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(in))
	r, s, err := ecdsa.Sign(rand.Reader, is.key, sum[:])
	if err != nil {
		panic(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return in + "." + b64(sig)
}

// verify is the broker's check of a bearer token: ES256 signature by the
// issuer's key, issuer, audience and expiry.
// clockSkew is the broker's allowance past a token's expiry, in seconds.
const clockSkew = 30

func (is *issuer) verify(tok string) (string, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return "", errors.New("bad signature encoding")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(&is.key.PublicKey, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("signature does not verify")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var c struct {
		Iss, Sub, Aud string
		Exp           int64
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", err
	}
	switch {
	case c.Iss != is.srv.URL:
		return "", fmt.Errorf("issuer %q", c.Iss)
	case c.Aud != is.audience:
		return "", fmt.Errorf("audience %q", c.Aud)
	case time.Now().Unix() >= c.Exp+clockSkew:
		// As a Kafka broker (sasl.oauthbearer.clock.skew.seconds, default
		// 30): a token the client sent just before its expiry is not
		// refused because the handshake reached the broker a moment later
		// (a 2 s token failed so at load 19).
		return "", errors.New("token expired")
	}
	return c.Sub, nil
}

// oauthBroker starts the embedded broker with SASL enforced and teaches it
// OAUTHBEARER through its control hooks: the handshake is accepted, the
// client's token is checked against the issuer, and only a valid token is
// admitted (as an internal PLAIN principal, so that kfake's own SASL state
// machine gates every later request of the connection).
func oauthBroker(t *testing.T, is *issuer) (kafkaconn.Config, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	pass := b64([]byte(fmt.Sprint(time.Now().UnixNano())))
	c, conn := brokertest.Start(t, broker.Options{SASL: []broker.SASLUser{{Mechanism: "PLAIN", User: "oauth-principal", Password: pass}}})
	var accepted, refused atomic.Int32
	kc := c.Kfake()
	var mu sync.Mutex
	kc.ControlKey(int16(kmsg.SASLHandshake), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		req := r.(*kmsg.SASLHandshakeRequest)
		if req.Mechanism == "OAUTHBEARER" {
			req.Mechanism = "PLAIN" // the next authenticate is ours
		}
		return nil, nil, false
	})
	kc.ControlKey(int16(kmsg.SASLAuthenticate), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		req := r.(*kmsg.SASLAuthenticateRequest)
		msg := string(req.SASLAuthBytes)
		if !strings.HasPrefix(msg, "n,") {
			return nil, nil, false // a PLAIN client: kfake decides
		}
		var tok string
		for _, kv := range strings.Split(msg, "\x01") {
			if v, ok := strings.CutPrefix(kv, "auth=Bearer "); ok {
				tok = v
			}
		}
		if _, err := is.verify(tok); err != nil {
			refused.Add(1)
			resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			m := "invalid token: " + err.Error()
			resp.ErrorMessage = &m
			return resp, nil, true
		}
		accepted.Add(1)
		req.SASLAuthBytes = []byte("\x00oauth-principal\x00" + pass)
		return nil, nil, false
	})
	return conn, &accepted, &refused
}

func secretFile(t *testing.T, secret string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// OAUTHBEARER end to end: the client fetches a token from the issuer with
// its client credentials (secret from a file), the broker checks the
// token's signature, issuer, audience and expiry, and the connection
// works; tokens are cached and refreshed before expiry; wrong credentials,
// a token the broker does not trust and an unsafe secret file are refused;
// a client without SASL is refused too.
func TestOAuthBearerEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A minute's tokens: the broker, on the real clock, accepts the first
	// one however slow the machine.
	is := newIssuer(t, "dpsurv-hospital-a", "s3cr3t-client-secret", time.Minute)
	conn, accepted, refused := oauthBroker(t, is)
	cfg := conn
	cfg.SASL = kafkaconn.SASLConfig{Mechanism: "oauthbearer", OAuth: kafkaconn.OAuthConfig{
		TokenURL: is.srv.URL + "/token", ClientID: "dpsurv-hospital-a", Scope: "kafka",
		ClientSecretFile: secretFile(t, "s3cr3t-client-secret", 0o600)}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// The client's clock stands still unless the test moves it: the token's
	// refresh point is reached by moving it, not by sleeping (the broker
	// still checks expiry on the real clock).
	clk := &testClock{now: time.Now()}
	if err := kafkaconn.SetTokenClock(cfg, clk.Now); err != nil {
		t.Fatal(err)
	}
	if err := kafkaconn.CheckConnection(ctx, cfg); err != nil {
		t.Fatalf("check connection: %v", err)
	}
	if err := kafkaconn.EnsureTopics(ctx, cfg, map[string]int{"oauth.topic": 1}, nil); err != nil {
		t.Fatalf("ensure topics over OAUTHBEARER: %v", err)
	}
	if accepted.Load() == 0 {
		t.Fatal("the broker's OAUTHBEARER hook accepted no token: the test checks nothing")
	}
	// Tokens are cached: every connection above used the first token (a
	// source that did not cache would fetch one per connection), and so
	// does one just before its refresh point, 80% of its life (48 s).
	clk.add(47 * time.Second)
	if err := kafkaconn.CheckConnection(ctx, cfg); err != nil {
		t.Fatalf("check connection before the refresh point: %v", err)
	}
	if n := len(is.issuedAt()); n != 1 {
		t.Errorf("%d tokens issued before the first one's refresh point, want 1 (not cached)", n)
	}
	// Past 80% of the lifetime the token is refreshed, before expiry: the
	// next connection fetches a new one, which the broker accepts.
	clk.add(2 * time.Second)
	before := accepted.Load()
	if err := kafkaconn.CheckConnection(ctx, cfg); err != nil {
		t.Fatalf("check connection after refresh: %v", err)
	}
	if n := len(is.issuedAt()); n != 2 {
		t.Errorf("%d tokens issued after the refresh point, want 2 (refreshed past 80%% of the lifetime)", n)
	}
	if accepted.Load() == before {
		t.Error("the broker saw no token after the refresh")
	}
	if r := refused.Load(); r != 0 {
		t.Errorf("broker refused %d tokens of the legitimate client", r)
	}

	t.Run("wrong client secret", func(t *testing.T) {
		bad := cfg
		bad.SASL.OAuth.ClientSecretFile = secretFile(t, "wrong", 0o600)
		bad.SASL.OAuth.Scope = "other" // a distinct token cache
		err := kafkaconn.CheckConnection(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong") {
			t.Errorf("err = %v, want the endpoint's 401 without the secret", err)
		}
	})
	t.Run("token from an issuer the broker does not trust", func(t *testing.T) {
		rogue := newIssuer(t, "dpsurv-hospital-a", "s3cr3t-client-secret", time.Minute)
		bad := cfg
		bad.SASL.OAuth.TokenURL = rogue.srv.URL + "/token"
		before := refused.Load()
		err := kafkaconn.CheckConnection(ctx, bad)
		if err == nil {
			t.Fatal("a token signed by another key was accepted")
		}
		if refused.Load() == before {
			t.Errorf("the broker hook did not see the rogue token (err %v)", err)
		}
	})
	t.Run("world-readable secret file", func(t *testing.T) {
		bad := cfg
		bad.SASL.OAuth.ClientSecretFile = secretFile(t, "s3cr3t-client-secret", 0o644)
		bad.SASL.OAuth.Scope = "world"
		err := kafkaconn.CheckConnection(ctx, bad)
		if err == nil || !errors.Is(err, kafkaconn.ErrSecretFileMode) || !strings.Contains(err.Error(), "kafka.sasl.oauth.client_secret_file") {
			t.Errorf("err = %v, want the secret-file mode refusal naming the field", err)
		}
	})
	t.Run("no sasl", func(t *testing.T) {
		if err := kafkaconn.CheckConnection(ctx, conn); err == nil {
			t.Error("a client without SASL was admitted")
		}
	})
}

// Config validation names the OAUTHBEARER fields.
func TestOAuthBearerConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sasl kafkaconn.SASLConfig
		want string
	}{
		{"no token url", kafkaconn.SASLConfig{Mechanism: "oauthbearer", OAuth: kafkaconn.OAuthConfig{ClientID: "a", ClientSecretFile: "/s"}}, "kafka.sasl.oauth.token_url: required"},
		{"plain http", kafkaconn.SASLConfig{Mechanism: "oauthbearer", OAuth: kafkaconn.OAuthConfig{TokenURL: "http://idp.example/token", ClientID: "a", ClientSecretFile: "/s"}}, "must be https"},
		{"no client id", kafkaconn.SASLConfig{Mechanism: "oauthbearer", OAuth: kafkaconn.OAuthConfig{TokenURL: "https://idp/t", ClientSecretFile: "/s"}}, "kafka.sasl.oauth.client_id: required"},
		{"no secret", kafkaconn.SASLConfig{Mechanism: "oauthbearer", OAuth: kafkaconn.OAuthConfig{TokenURL: "https://idp/t", ClientID: "a"}}, "kafka.sasl.oauth.client_secret_file: required"},
		{"username with oauth", kafkaconn.SASLConfig{Mechanism: "oauthbearer", Username: "u", OAuth: kafkaconn.OAuthConfig{TokenURL: "https://idp/t", ClientID: "a", ClientSecretFile: "/s"}}, "kafka.sasl.username: not used"},
		{"oauth without mechanism", kafkaconn.SASLConfig{OAuth: kafkaconn.OAuthConfig{ClientID: "a"}}, "kafka.sasl.mechanism: required when oauth is set"},
		{"oauth with scram", kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: "u", PasswordFile: "/p", OAuth: kafkaconn.OAuthConfig{ClientID: "a"}}, "kafka.sasl.oauth: only with mechanism oauthbearer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := kafkaconn.Config{Brokers: []string{"b:9092"}, SASL: tc.sasl}.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
