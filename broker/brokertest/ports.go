package brokertest

import (
	"testing"

	"github.com/dpsurv/dpsurv/broker/brokertest/freeport"
)

// FreePort is freeport.Port: a loopback port no one holds now, below the
// kernel's ephemeral range, for a test that binds it later.
func FreePort(t testing.TB) string {
	t.Helper()
	return freeport.Port(t)
}

// FreeAddr is freeport.Addr: FreePort as a loopback address, 127.0.0.1:PORT.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return freeport.Addr(t)
}
