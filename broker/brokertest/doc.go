// Package brokertest holds test helpers for code that talks to Kafka, kept
// out of the production binary:
//
//   - Start runs an in-process cluster (package broker) for one test, closes
//     it with t.Cleanup and returns it with a kafkaconn.Config pointing at it;
//   - NewPKI writes a throwaway CA with server and client certificates;
//   - RunWithLeakCheck, called from TestMain, fails the package's run when
//     kafka-go, kfake or dpsurv goroutines outlive the tests.
//   - WaitBoundParallel, called from TestMain, lets more tests that call
//     t.Parallel run at once than there are cores: for packages whose tests
//     mostly wait on a broker or a timeout.
//
// Only _test.go files import it.
package brokertest
