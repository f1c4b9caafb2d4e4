package brokertest

import (
	"errors"
	"testing"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
)

// ConnectUser is the SASL user the cluster of ConnectCases must accept:
// SCRAM-SHA-512 user "u" with password "right".
var ConnectUser = broker.SASLUser{Mechanism: "SCRAM-SHA-512", User: "u", Password: "right"}

// ConnectCase is one case of a Kafka client's Connect test: the client
// configuration and the error mark Connect must return (nil: it connects).
type ConnectCase struct {
	Name string
	Conn kafkaconn.Config
	Want error
}

// ConnectCases are the cases every Kafka client's Connect is held to,
// against a cluster at addrs that accepts ConnectUser: the right password
// connects, a wrong one is message.ErrFatal, and an address where no broker
// listens is message.ErrNotConnected.
func ConnectCases(t testing.TB, addrs []string) []ConnectCase {
	t.Helper()
	down := FreeAddr(t) // nothing listens there
	sasl := func(pw string) kafkaconn.SASLConfig {
		return kafkaconn.SASLConfig{Mechanism: "scram-sha-512", Username: ConnectUser.User, Password: pw}
	}
	return []ConnectCase{
		{"right password", kafkaconn.Config{Brokers: addrs, SASL: sasl(ConnectUser.Password)}, nil},
		{"wrong password", kafkaconn.Config{Brokers: addrs, SASL: sasl("wrong")}, message.ErrFatal},
		{"no broker", kafkaconn.Config{Brokers: []string{down}}, message.ErrNotConnected},
	}
}

// CheckConnect fails the test unless err, what Connect returned, is what
// want asks: nil, or an error marked want; an unreachable broker must never
// be marked fatal.
func CheckConnect(t testing.TB, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("Connect = %v, want nil", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("Connect = %v, want an error marked %v", err, want)
	case errors.Is(want, message.ErrNotConnected) && errors.Is(err, message.ErrFatal):
		t.Fatalf("Connect = %v: an unreachable broker is not fatal", err)
	}
}
