package brokertest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// MockCluster is librdkafka's mock cluster (a second, independent
// implementation of the Kafka protocol), run by a kcat process for one
// test. It has no admin API (no CreateTopics, DescribeConfigs or
// DescribeGroups): CreateTopics makes topics (4 partitions each) with
// metadata requests.
type MockCluster struct {
	Addrs []string
	mu    sync.Mutex
	tail  []string // the last log lines, for failure messages
}

var bootstrapRE = regexp.MustCompile(`bootstrap\.servers=([0-9A-Za-z.:,\[\]-]+)`)

// StartMockCluster starts a mock cluster of n brokers with `kcat -b x:1 -X
// test.mock.num.brokers=n -d mock -C -t <keepalive topic>` (the consumer
// keeps the cluster alive; -d mock logs its bootstrap servers), and stops
// it with t.Cleanup. It skips the test, loudly, when kcat is not
// installed (Debian: apt-get install kcat; .ci/run installs it).
func StartMockCluster(t testing.TB, n int) *MockCluster {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("SKIPPED: kcat is not installed; this test needs librdkafka's mock cluster (Debian: apt-get install kcat)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kcat, "-b", "x:1", "-X", fmt.Sprintf("test.mock.num.brokers=%d", n), "-d", "mock",
		"-C", "-t", "mock.keepalive", "-q")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start kcat mock cluster: %v", err)
	}
	m := &MockCluster{}
	found := make(chan []string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			m.mu.Lock()
			m.tail = append(m.tail, line)
			if len(m.tail) > 50 {
				m.tail = m.tail[1:]
			}
			m.mu.Unlock()
			if mm := bootstrapRE.FindStringSubmatch(line); mm != nil && !sent {
				found <- strings.Split(mm[1], ",")
				sent = true
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		<-drained
	})
	select {
	case m.Addrs = <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("kcat mock cluster: no bootstrap servers logged within 20 s; log tail:\n%s", m.Tail())
	}
	return m
}

// Tail is the end of the mock cluster's log.
func (m *MockCluster) Tail() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.tail, "\n")
}

// CreateTopics makes topics on the mock cluster (4 partitions each):
// `kcat -L -t topic` asks for their metadata, which the mock cluster
// answers by creating them.
func (m *MockCluster) CreateTopics(t testing.TB, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		out, err := exec.Command("kcat", "-b", strings.Join(m.Addrs, ","), "-m", "10", "-L", "-t", topic).CombinedOutput()
		if err != nil || !strings.Contains(string(out), fmt.Sprintf("topic %q with 4 partitions", topic)) {
			t.Fatalf("create topic %s on the mock cluster: %v\n%s", topic, err, out)
		}
	}
}

// Produce writes each file as one message to topic with kcat (librdkafka's
// producer, acks=all), partitioned by librdkafka's default partitioner.
func (m *MockCluster) Produce(t testing.TB, topic string, files ...string) {
	t.Helper()
	args := append([]string{"-b", strings.Join(m.Addrs, ","), "-X", "acks=all", "-P", "-t", topic}, files...)
	if out, err := exec.Command("kcat", args...).CombinedOutput(); err != nil {
		t.Fatalf("kcat produce %d files to %s: %v\n%s", len(files), topic, err, out)
	}
}
