package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go/sasl"
)

// MechanismOAuthBearer is SASL/OAUTHBEARER (RFC 7628, KIP-255) with a
// token from an OIDC provider's token endpoint (client credentials grant,
// RFC 6749 §4.4).
const MechanismOAuthBearer = "oauthbearer"

// OAuthConfig configures SASL/OAUTHBEARER.
type OAuthConfig struct {
	// TokenURL is the provider's token endpoint (https; http only to a
	// loopback host, for tests).
	TokenURL string `yaml:"token_url"`
	// ClientID and ClientSecretFile are the client's credentials, sent
	// with HTTP Basic authentication (client_secret_basic). The secret file
	// passes the checks of every secret file (regular, owner-only unless
	// kafka.sasl.allow_group_readable_password_file, bounded size).
	ClientID         string `yaml:"client_id"`
	ClientSecretFile string `yaml:"client_secret_file"`
	// Scope, when set, is sent as the scope parameter (space-separated).
	Scope string `yaml:"scope"`
	// Audience, when set, is sent as the audience parameter (Auth0,
	// Okta, Keycloak token exchange).
	Audience string `yaml:"audience"`
	// CAFile verifies the token endpoint's certificate (default: the
	// system roots).
	CAFile string `yaml:"ca_file"`
	// ClientSecret overrides ClientSecretFile; set programmatically
	// (tests).
	ClientSecret string `yaml:"-"`
}

func (o OAuthConfig) validate(add func(field, format string, args ...any)) {
	if o.TokenURL == "" {
		add("sasl.oauth.token_url", "required with mechanism oauthbearer")
	} else if u, err := url.Parse(o.TokenURL); err != nil || u.Host == "" {
		add("sasl.oauth.token_url", "not an absolute URL: %q", o.TokenURL)
	} else if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
		add("sasl.oauth.token_url", "must be https (http only to a loopback host): %q", o.TokenURL)
	}
	if o.ClientID == "" {
		add("sasl.oauth.client_id", "required with mechanism oauthbearer")
	}
	if o.ClientSecretFile == "" && o.ClientSecret == "" {
		add("sasl.oauth.client_secret_file", "required with mechanism oauthbearer")
	}
}

func isLoopback(host string) bool {
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1"
}

// refreshFactor: a token is refreshed once this fraction of its lifetime
// has passed (Kafka's sasl.login.refresh.window.factor default), and never
// used within refreshMargin of its expiry.
const (
	refreshFactor = 0.8
	refreshMargin = 30 * time.Second
	// defaultTokenLifetime is assumed when the endpoint omits expires_in.
	defaultTokenLifetime = 5 * time.Minute
)

// tokenSource fetches and caches the access token; one per distinct
// configuration in the process, shared by every connection.
type tokenSource struct {
	cfg   OAuthConfig
	allow bool // group-readable secret file accepted
	http  *http.Client
	now   func() time.Time

	mu      sync.Mutex
	token   string
	refresh time.Time // fetch anew from here on
	expiry  time.Time
	fetches int
}

var tokenSources sync.Map // key: config fingerprint -> *tokenSource

func (c Config) tokenSource() (*tokenSource, error) {
	o := c.SASL.OAuth
	key := strings.Join([]string{o.TokenURL, o.ClientID, o.ClientSecretFile, o.ClientSecret, o.Scope, o.Audience, o.CAFile, fmt.Sprint(c.SASL.AllowGroupReadable)}, "\x00")
	if ts, ok := tokenSources.Load(key); ok {
		return ts.(*tokenSource), nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.CAFile != "" {
		pem, err := ReadRegularFile(o.CAFile, 1<<20, nil)
		if err != nil {
			return nil, fmt.Errorf("kafka.sasl.oauth.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka.sasl.oauth.ca_file: no PEM certificate in %s", o.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	ts := &tokenSource{cfg: o, allow: c.SASL.AllowGroupReadable, http: &http.Client{Transport: tr, Timeout: 15 * time.Second}, now: time.Now}
	actual, _ := tokenSources.LoadOrStore(key, ts)
	return actual.(*tokenSource), nil
}

func (ts *tokenSource) secret() (string, error) {
	if ts.cfg.ClientSecret != "" {
		return ts.cfg.ClientSecret, nil
	}
	return readSecretLine("kafka.sasl.oauth.client_secret_file", ts.cfg.ClientSecretFile, 4096, ts.allow)
}

// Token returns a valid access token, fetching a new one when the cached
// one has passed its refresh point. The secret file is read at each fetch,
// so a rotated secret is used from the next refresh on.
func (ts *tokenSource) Token(ctx context.Context) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.now()
	if ts.token != "" && now.Before(ts.refresh) {
		return ts.token, nil
	}
	tok, life, err := ts.fetch(ctx)
	if err != nil {
		if ts.token != "" && now.Before(ts.expiry.Add(-refreshMargin)) {
			return ts.token, nil // the endpoint is down: keep the valid token
		}
		return "", err
	}
	ts.token, ts.fetches = tok, ts.fetches+1
	ts.expiry = now.Add(life)
	ts.refresh = now.Add(time.Duration(refreshFactor * float64(life)))
	if m := ts.expiry.Add(-refreshMargin); life > 2*refreshMargin && m.Before(ts.refresh) {
		ts.refresh = m
	}
	return tok, nil
}

// fetch runs the client credentials grant. Errors never quote the secret
// or the token.
func (ts *tokenSource) fetch(ctx context.Context) (string, time.Duration, error) {
	secret, err := ts.secret()
	if err != nil {
		return "", 0, err
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if ts.cfg.Scope != "" {
		form.Set("scope", ts.cfg.Scope)
	}
	if ts.cfg.Audience != "" {
		form.Set("audience", ts.cfg.Audience)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("kafka.sasl.oauth.token_url: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(ts.cfg.ClientID), url.QueryEscape(secret))
	resp, err := ts.http.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("oauth token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", 0, fmt.Errorf("oauth token endpoint: read response: %w", err)
	}
	var tr struct {
		AccessToken string      `json:"access_token"`
		TokenType   string      `json:"token_type"`
		ExpiresIn   json.Number `json:"expires_in"`
		Error       string      `json:"error"`
		ErrorDesc   string      `json:"error_description"`
	}
	_ = json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("oauth token endpoint: %s: %s %s", resp.Status, tr.Error, tr.ErrorDesc)
	}
	if tr.AccessToken == "" {
		return "", 0, errors.New("oauth token endpoint: response has no access_token")
	}
	if tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer") {
		return "", 0, fmt.Errorf("oauth token endpoint: token_type %q, want Bearer", tr.TokenType)
	}
	if strings.ContainsAny(tr.AccessToken, "\x01 ") {
		return "", 0, errors.New("oauth token endpoint: access_token has characters OAUTHBEARER cannot carry")
	}
	life := defaultTokenLifetime
	if tr.ExpiresIn != "" {
		sec, err := tr.ExpiresIn.Float64()
		if err != nil || sec <= 0 {
			return "", 0, fmt.Errorf("oauth token endpoint: expires_in %q", tr.ExpiresIn)
		}
		life = time.Duration(sec * float64(time.Second))
	}
	return tr.AccessToken, life, nil
}

// oauthMechanism is kafka-go's sasl.Mechanism for OAUTHBEARER.
type oauthMechanism struct{ ts *tokenSource }

func (oauthMechanism) Name() string { return "OAUTHBEARER" }

// Start sends the RFC 7628 initial client response with a fresh token.
func (m oauthMechanism) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	tok, err := m.ts.Token(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka.sasl.oauth: %w", err)
	}
	return oauthState{}, []byte("n,,\x01auth=Bearer " + tok + "\x01\x01"), nil
}

type oauthState struct{}

// Next: an empty server message is success; anything else is the
// server's error (RFC 7628 §3.2.2), reported as an authentication failure.
func (oauthState) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	if len(challenge) == 0 {
		return true, nil, nil
	}
	return true, nil, fmt.Errorf("kafka.sasl.oauth: broker refused the token: %.200s", challenge)
}
