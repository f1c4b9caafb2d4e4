package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sinks"
)

func TestStartOptions(t *testing.T) {
	// A free loopback port for the explicit-listen case.
	port := brokertest.FreePort(t)
	tests := []struct {
		name      string
		opts      broker.Options
		wantErr   string
		wantAddr  string
		wantParts map[string]int
	}{
		{name: "default loopback", opts: broker.Options{}, wantAddr: "127.0.0.1:"},
		{name: "explicit listen", opts: broker.Options{Listen: "127.0.0.1:" + port}, wantAddr: "127.0.0.1:" + port},
		{name: "seed topics", opts: broker.Options{Partitions: 3, Topics: map[string]int{"a": 2, "b": 0}},
			wantParts: map[string]int{"a": 2, "b": 3}},
		{name: "bad listen", opts: broker.Options{Listen: "nonsense"}, wantErr: "listen \"nonsense\""},
		{name: "bad port", opts: broker.Options{Listen: "127.0.0.1:99999"}, wantErr: "invalid port"},
		{name: "negative partitions", opts: broker.Options{Partitions: -1}, wantErr: "partitions must be >= 0"},
		{name: "bad sasl mechanism", opts: broker.Options{SASL: []broker.SASLUser{{Mechanism: "GSSAPI", User: "u", Password: "p"}}}, wantErr: "unknown sasl mechanism"},
		{name: "sasl without password", opts: broker.Options{SASL: []broker.SASLUser{{Mechanism: "PLAIN", User: "u"}}}, wantErr: "user and password are required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := broker.Start(tc.opts)
			if tc.wantErr != "" {
				if err == nil {
					_ = c.Close()
					t.Fatalf("Start succeeded, want error containing %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Start error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
			addrs := c.Addrs()
			if len(addrs) != 1 || !strings.HasPrefix(addrs[0], tc.wantAddr) {
				t.Errorf("Addrs() = %v, want one address starting %q", addrs, tc.wantAddr)
			}
			for topic, want := range tc.wantParts {
				if got := len(c.Kfake().PartitionInfos(topic)); got != want {
					t.Errorf("topic %s has %d partitions, want %d", topic, got, want)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := kafkaconn.CheckConnection(ctx, kafkaconn.Config{Brokers: addrs}); err != nil {
				t.Errorf("CheckConnection: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}

func TestAutoCreatedTopicsUseDefaultPartitions(t *testing.T) {
	for _, tc := range []struct{ parts, want int }{{0, broker.DefaultPartitions}, {7, 7}} {
		c, _ := brokertest.Start(t, broker.Options{Partitions: tc.parts})
		s, err := sinks.NewKafka(sinks.KafkaConfig{Conn: kafkaconn.Config{Brokers: c.Addrs()}, Topic: "auto", AllowAutoTopicCreation: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = s.Write(ctx, []message.Message{{Value: []byte("x")}})
		cancel()
		_ = s.Close()
		if err != nil {
			t.Fatalf("write with auto-create: %v", err)
		}
		if got := len(c.Kfake().PartitionInfos("auto")); got != tc.want {
			t.Errorf("Partitions=%d: auto-created topic has %d partitions, want %d", tc.parts, got, tc.want)
		}
	}
}

func TestDataDirPersistsTopicsAndRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	c1, err := broker.Start(broker.Options{DataDir: dir, SyncWrites: true, Topics: map[string]int{"t": 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c1.Close() })
	s, err := sinks.NewKafka(sinks.KafkaConfig{Conn: kafkaconn.Config{Brokers: c1.Addrs()}, Topic: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	var msgs []message.Message
	for i := range 30 {
		msgs = append(msgs, message.Message{Key: []byte(strconv.Itoa(i)), Value: []byte("v")})
	}
	if err := s.Write(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("data dir: %v", err)
	}
	c2, _ := brokertest.Start(t, broker.Options{DataDir: dir})
	var total int64
	for _, p := range c2.Kfake().PartitionInfos("t") {
		total += p.HighWatermark
	}
	if n := len(c2.Kfake().PartitionInfos("t")); n != 2 || total != 30 {
		t.Errorf("after restart: %d partitions, %d records; want 2 and 30", n, total)
	}
}

func TestRestartAppliesCurrentSASLUsers(t *testing.T) {
	dir := t.TempDir()
	check := func(c *broker.Cluster, pass string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return kafkaconn.CheckConnection(ctx, kafkaconn.Config{Brokers: c.Addrs(),
			SASL: kafkaconn.SASLConfig{Mechanism: "plain", Username: "u", Password: pass}})
	}
	c1, err := broker.Start(broker.Options{DataDir: dir, SASL: []broker.SASLUser{{Mechanism: "PLAIN", User: "u", Password: "old"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c1.Close() })
	if err := check(c1, "old"); err != nil {
		t.Fatalf("old password before restart: %v", err)
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	c2, _ := brokertest.Start(t, broker.Options{DataDir: dir, SASL: []broker.SASLUser{{Mechanism: "PLAIN", User: "u", Password: "new"}}})
	if err := check(c2, "new"); err != nil {
		t.Errorf("new password after restart: %v", err)
	}
	if err := check(c2, "old"); err == nil {
		t.Error("old password still accepted after restart")
	}
}
