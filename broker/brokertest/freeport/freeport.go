package freeport

import (
	"crypto/rand"
	"math/big"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Port returns a loopback port no one holds now, for a test that binds
// it later (a service's http.listen, a documented command's broker). It is
// drawn below the kernel's ephemeral range: a port from 127.0.0.1:0 is
// ephemeral, and on a loaded machine the seconds between this call and the
// bind are enough for an outgoing connection to be handed it ("address
// already in use" at load 19). Ports below the range are only ever bound
// on purpose; a random one of them (crypto/rand: this file is
// production code to the float-noise linter) is checked free here.
func Port(t testing.TB) string {
	t.Helper()
	lo := ephemeralLow()
	for range 200 {
		r, err := rand.Int(rand.Reader, big.NewInt(int64(lo-10000)))
		if err != nil {
			break
		}
		port := 10000 + int(r.Int64())
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			continue
		}
		return strconv.Itoa(port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// Addr is Port as a loopback address, 127.0.0.1:PORT.
func Addr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + Port(t)
}

// ephemeralLow is the bottom of the kernel's ephemeral port range (Linux's
// ip_local_port_range; 32768, its default, elsewhere).
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 11000 {
				return lo
			}
		}
	}
	return 32768
}
