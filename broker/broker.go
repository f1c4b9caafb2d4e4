package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
)

// DefaultPartitions is the partition count of auto-created topics when
// Options.Partitions is zero.
const DefaultPartitions = 4

// Options configures an embedded cluster.
type Options struct {
	// Listen is host:port to bind; "" means 127.0.0.1:0 (a random
	// loopback port).
	Listen string
	// DataDir persists the cluster's state across restarts when set.
	DataDir string
	// SyncWrites fsyncs every produced batch before acknowledging it (with
	// DataDir); slower, but a process crash then loses nothing acknowledged.
	SyncWrites bool
	// Partitions is the partition count of auto-created topics (default 4).
	Partitions int
	// Topics are created at start if missing: name -> partitions (<= 0
	// means Partitions).
	Topics map[string]int
	// TLS, when set, makes the listener TLS with this server config.
	TLS *tls.Config
	// SASL, when non-empty, requires SASL authentication with these users.
	SASL []SASLUser
	// Logger receives kfake's log lines (errors and warnings at their
	// level, the rest at debug). Nil discards them.
	Logger *zap.Logger
}

// SASLUser is one user the cluster accepts. Mechanism is PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512 (case-insensitive).
type SASLUser struct {
	Mechanism, User, Password string
}

// Cluster is a running embedded cluster.
type Cluster struct {
	c     *kfake.Cluster
	addrs []string
	once  sync.Once
}

// Start starts a cluster with the given options.
func Start(opts Options) (*Cluster, error) {
	host, port, err := parseListen(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("start broker: %w", err)
	}
	parts := opts.Partitions
	if parts < 0 {
		return nil, fmt.Errorf("start broker: partitions must be >= 0, got %d", parts)
	}
	if parts == 0 {
		parts = DefaultPartitions
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
		}),
		kfake.DefaultNumPartitions(parts),
		kfake.AllowAutoTopicCreation(),
		kfake.ClusterID("dpsurv-embedded"),
	}
	if opts.Logger != nil {
		kopts = append(kopts, kfake.WithLogger(zapLogger{opts.Logger.Named("kfake")}))
	}
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("start broker: create data dir: %w", err)
		}
		// kfake reloads SASL users from sasl.json, overriding the options:
		// drop it so that Options.SASL is the only source of users (a
		// changed or removed password takes effect on restart).
		if err := os.Remove(filepath.Join(opts.DataDir, "sasl.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("start broker: reset persisted sasl users: %w", err)
		}
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
		if opts.SyncWrites {
			kopts = append(kopts, kfake.SyncWrites())
		}
	}
	if opts.TLS != nil {
		kopts = append(kopts, kfake.TLS(opts.TLS))
	}
	if len(opts.SASL) > 0 {
		kopts = append(kopts, kfake.EnableSASL())
		for i, u := range opts.SASL {
			mech, err := kfakeMechanism(u.Mechanism)
			if err != nil {
				return nil, fmt.Errorf("start broker: sasl user %d: %w", i, err)
			}
			if u.User == "" || u.Password == "" {
				return nil, fmt.Errorf("start broker: sasl user %d: user and password are required", i)
			}
			kopts = append(kopts, kfake.Superuser(mech, u.User, u.Password))
		}
	}
	kc, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("start broker: %w", err)
	}
	c := &Cluster{c: kc, addrs: kc.ListenAddrs()}
	for name, n := range opts.Topics {
		if n <= 0 {
			n = parts
		}
		if err := kc.CreateTopic(name, int32(n), nil); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			c.Close()
			return nil, fmt.Errorf("start broker: create topic %q: %w", name, err)
		}
	}
	return c, nil
}

func parseListen(listen string) (string, int, error) {
	if listen == "" {
		return "127.0.0.1", 0, nil
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("listen %q: invalid port", listen)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, port, nil
}

func kfakeMechanism(m string) (string, error) {
	switch strings.ToUpper(m) {
	case "PLAIN":
		return "PLAIN", nil
	case "SCRAM-SHA-256":
		return "SCRAM-SHA-256", nil
	case "SCRAM-SHA-512":
		return "SCRAM-SHA-512", nil
	default:
		return "", fmt.Errorf("unknown sasl mechanism %q (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", m)
	}
}

// Addrs returns the host:port addresses clients bootstrap from.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// Kfake returns the underlying kfake cluster, for tests that inspect group
// state or create topics directly.
func (c *Cluster) Kfake() *kfake.Cluster { return c.c }

// Close stops the cluster; with a DataDir it first writes its state to disk.
// Close is idempotent.
func (c *Cluster) Close() error {
	c.once.Do(c.c.Close)
	return nil
}

// zapLogger adapts zap to kfake's Logger.
type zapLogger struct{ l *zap.Logger }

func (z zapLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	s := fmt.Sprintf(msg, args...)
	switch level {
	case kfake.LogLevelError:
		z.l.Error(s)
	case kfake.LogLevelWarn:
		z.l.Warn(s)
	default:
		z.l.Debug(s)
	}
}
