package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// ErrAuth marks a rejected SASL credential; the error text starts with
// "kafka authentication failed:".
var ErrAuth = errors.New("kafka authentication failed")

// ErrTLS marks a failed TLS handshake.
var ErrTLS = errors.New("kafka tls handshake failed")

// adminTimeout bounds one admin request when the context has no deadline.
const adminTimeout = 15 * time.Second

func (c Config) client() (*kafka.Client, *kafka.Transport, error) {
	t, err := c.Transport()
	if err != nil {
		return nil, nil, err
	}
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Transport: t, Timeout: adminTimeout}, t, nil
}

// openAdmin is c's admin client for the requests of one call, with ctx
// bounded by adminTimeout when it has no deadline; done releases both.
func (c Config) openAdmin(ctx context.Context) (context.Context, *kafka.Client, func(), error) {
	cl, t, err := c.client()
	if err != nil {
		return ctx, nil, nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	return ctx, cl, func() { cancel(); t.CloseIdleConnections() }, nil
}

// Classify wraps err with ErrAuth when it is a rejected SASL credential or
// an authorization failure, and with ErrTLS when it is a TLS handshake or
// certificate failure; other errors are returned unchanged. Readers and
// writers use it so that every client reports these failures alike.
func Classify(err error) error {
	if err == nil || errors.Is(err, ErrAuth) || errors.Is(err, ErrTLS) {
		return err
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		switch ke {
		case kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism, kafka.IllegalSASLState,
			kafka.TopicAuthorizationFailed, kafka.ClusterAuthorizationFailed, kafka.GroupAuthorizationFailed:
			return fmt.Errorf("%w: %w", ErrAuth, err)
		}
	}
	var (
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		certInvalid x509.CertificateInvalidError
		recErr      tls.RecordHeaderError
		verifyErr   *tls.CertificateVerificationError
	)
	// Alerts the server sends (e.g. "remote error: tls: certificate
	// required") have an unexported type: match their text.
	if errors.As(err, &unknownAuth) || errors.As(err, &hostErr) || errors.As(err, &certInvalid) ||
		errors.As(err, &recErr) || errors.As(err, &verifyErr) || strings.Contains(err.Error(), "tls: ") {
		return fmt.Errorf("%w: %w", ErrTLS, err)
	}
	return err
}

// classify is Classify plus a hint for a connection closed without an
// error code, which is how a broker treats a client that skips SASL.
func classify(err error) error {
	err = Classify(err)
	if errors.Is(err, ErrAuth) || errors.Is(err, ErrTLS) {
		return err
	}
	// A broker that requires SASL closes the connection on a client that
	// sends requests without authenticating.
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("connection closed by broker (SASL or TLS required? check kafka.sasl and kafka.tls): %w", err)
	}
	return err
}

// CheckConnection dials the brokers (TCP, TLS, SASL) and fetches cluster
// metadata, so that a wrong address, TLS setting or credential fails at
// start-up with a clear error instead of later in a reader or writer. It
// succeeds as soon as one broker answers.
func CheckConnection(ctx context.Context, c Config) error {
	d, err := c.Dialer()
	if err != nil {
		return fmt.Errorf("check kafka connection: %w", err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var errs []error
	for _, addr := range c.Brokers {
		err := checkBroker(ctx, d, addr)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("check kafka connection to %s: %w", addr, classify(err)))
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

func checkBroker(ctx context.Context, d *kafka.Dialer, addr string) error {
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return err
		}
	}
	// A broker that accepts the connection and never answers would hold
	// the metadata request until the deadline: a cancelled ctx (the
	// service stopping) closes the connection instead.
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	brokers, err := conn.Brokers()
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("metadata: %w", ctx.Err())
		}
		return fmt.Errorf("metadata: %w", err)
	}
	if len(brokers) == 0 {
		return errors.New("metadata lists no brokers")
	}
	return nil
}

// EnsureTopics creates each topic in topics (name -> partitions, <= 0 for
// the broker default) that does not exist yet; compacted[name] sets
// cleanup.policy=compact on creation. Existing topics are left as they are.
func EnsureTopics(ctx context.Context, c Config, topics map[string]int, compacted map[string]bool) error {
	if len(topics) == 0 {
		return nil
	}
	ctx, cl, done, err := c.openAdmin(ctx)
	if err != nil {
		return fmt.Errorf("ensure kafka topics: %w", err)
	}
	defer done()

	names := make([]string, 0, len(topics))
	for name := range topics {
		if name == "" {
			return errors.New("ensure kafka topics: empty topic name")
		}
		names = append(names, name)
	}
	sort.Strings(names)
	meta, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return fmt.Errorf("ensure kafka topics: metadata: %w", diagnose(ctx, c, err))
	}
	exists := make(map[string]bool, len(meta.Topics))
	for _, tp := range meta.Topics {
		if tp.Error == nil && len(tp.Partitions) > 0 {
			exists[tp.Name] = true
		}
	}
	var req kafka.CreateTopicsRequest
	for _, name := range names {
		if exists[name] {
			continue
		}
		n := topics[name]
		if n <= 0 {
			n = -1
		}
		tc := kafka.TopicConfig{Topic: name, NumPartitions: n, ReplicationFactor: -1}
		if compacted[name] {
			tc.ConfigEntries = []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}
		}
		req.Topics = append(req.Topics, tc)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	missing := make([]string, len(req.Topics))
	for i, tc := range req.Topics {
		missing[i] = tc.Topic
	}
	resp, err := cl.CreateTopics(ctx, &req)
	if err != nil {
		err = diagnose(ctx, c, err)
		if errors.Is(err, ErrAuth) || errors.Is(err, ErrTLS) || ctx.Err() != nil {
			return fmt.Errorf("ensure kafka topics: create: %w", err)
		}
		// A broker without the CreateTopics API (librdkafka's mock
		// cluster) or one that refuses it: the topics must be made by
		// an operator.
		return &MissingTopicsError{Topics: missing, Err: err}
	}
	var errs []error
	var failed []string
	for _, tc := range req.Topics {
		if e := resp.Errors[tc.Topic]; e != nil && !errors.Is(e, kafka.TopicAlreadyExists) {
			if e := classify(e); errors.Is(e, ErrAuth) || errors.Is(e, ErrTLS) {
				errs = append(errs, fmt.Errorf("ensure kafka topics: create %q: %w", tc.Topic, e))
				continue
			}
			failed = append(failed, tc.Topic)
			errs = append(errs, fmt.Errorf("create %q: %w", tc.Topic, e))
		}
	}
	if len(failed) > 0 && len(failed) == len(errs) {
		return &MissingTopicsError{Topics: failed, Err: errors.Join(errs...)}
	}
	return errors.Join(errs...)
}

// MissingTopicsError is EnsureTopics' error when topics do not exist and
// the broker would not create them: it lacks the CreateTopics API (e.g.
// librdkafka's mock cluster), or refused the request. Retrying helps once
// an operator has created them.
type MissingTopicsError struct {
	Topics []string // sorted
	Err    error    // why they could not be created
}

func (e *MissingTopicsError) Error() string {
	return fmt.Sprintf("kafka topics %s do not exist and could not be created (%v): create them on the cluster",
		strings.Join(e.Topics, ", "), e.Err)
}

func (e *MissingTopicsError) Unwrap() error { return e.Err }

// diagnose classifies err from a Transport-based request. A Transport reports
// a broker closing the connection during SASL as a bare EOF, so on EOF the
// connection is checked again with a Dialer, which tells a rejected
// credential apart.
func diagnose(ctx context.Context, c Config, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if cerr := CheckConnection(ctx, c); cerr != nil && (errors.Is(cerr, ErrAuth) || errors.Is(cerr, ErrTLS)) {
			return cerr
		}
	}
	return classify(err)
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, adminTimeout)
}
