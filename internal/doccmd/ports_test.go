package doccmd

import (
	"regexp"
	"sync"
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest/freeport"
)

// loopbackPortRe matches a loopback address with a port as the documents
// print it (127.0.0.1:8080, localhost:9092).
var loopbackPortRe = regexp.MustCompile(`\b(?:127\.0\.0\.1|localhost):([0-9]{2,5})\b`)

// portMap gives every port a document prints on the loopback interface a
// free port of this machine, the same one wherever the document (or another
// document, or a file it names) prints that port, so that a documented
// broker and the config that points at it still meet. Documents print the
// ports a user types (8080, 9092); a test that bound them would fail
// whenever anything else on the machine holds them.
type portMap struct {
	t  *testing.T
	mu sync.Mutex
	m  map[string]string
}

func newPortMap(t *testing.T) *portMap { return &portMap{t: t, m: map[string]string{}} }

// rewrite replaces each loopback address:port in s by 127.0.0.1:FREE.
func (p *portMap) rewrite(s string) string {
	return loopbackPortRe.ReplaceAllStringFunc(s, func(addr string) string {
		port := loopbackPortRe.FindStringSubmatch(addr)[1]
		p.mu.Lock()
		defer p.mu.Unlock()
		free, ok := p.m[port]
		if !ok {
			free = freePort(p.t)
			p.m[port] = free
			p.t.Logf("documented port %s runs on free port %s", port, free)
		}
		return "127.0.0.1:" + free
	})
}

// freePort is freeport.Port (brokertest.FreePort, without the cluster
// helpers, which this test binary need not link): a free port below the kernel's
// ephemeral range, since the documented command binds it seconds later.
func freePort(t *testing.T) string { return freeport.Port(t) }

// TestPortMapRewrite: a documented port becomes the same free port
// everywhere, and never the printed one.
func TestPortMapRewrite(t *testing.T) {
	p := newPortMap(t)
	a := p.rewrite(`http: {listen: "127.0.0.1:8080"}`)
	b := p.rewrite("dpsurv broker --listen localhost:8080 & curl 127.0.0.1:9092/x")
	m := loopbackPortRe.FindAllStringSubmatch(a+" "+b, -1)
	if len(m) != 3 {
		t.Fatalf("rewritten %q %q: %d addresses, want 3", a, b, len(m))
	}
	if m[0][1] == "8080" || m[2][1] == "9092" {
		t.Errorf("a printed port survived: %q %q", a, b)
	}
	if m[0][1] != m[1][1] {
		t.Errorf("port 8080 mapped to %s and %s, want one port", m[0][1], m[1][1])
	}
	if m[0][1] == m[2][1] {
		t.Errorf("ports 8080 and 9092 mapped to the same port %s", m[0][1])
	}
	if got := p.rewrite("kafka-0.kafka:9093 and :8080"); got != "kafka-0.kafka:9093 and :8080" {
		t.Errorf("a non-loopback address was rewritten: %q", got)
	}
}
