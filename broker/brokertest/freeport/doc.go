// Package freeport finds a loopback port no one holds, for a test that
// binds it later (a service's http.listen, a documented command's broker).
// It imports only the standard library, so a test that needs free ports
// but no Kafka cluster (internal/doccmd) does not link one; brokertest's
// FreePort and FreeAddr are these functions.
//
// Only _test.go files and test-helper packages import it.
package freeport
