// Package broker runs an in-process Kafka-protocol cluster (franz-go's
// kfake) for the demo, local development and tests, so the real kafka-go
// client code is what runs against it.
//
// Contract:
//   - Start listens on loopback (127.0.0.1, a random port) unless
//     Options.Listen names another address; the cluster has one broker and
//     advertises the address it is bound to.
//   - Topics in Options.Topics are created at start if missing (also after a
//     restart on an existing DataDir); other topics are auto-created on first
//     use with Options.Partitions partitions (default 4).
//   - With DataDir set, kfake persists topics, record batches, committed
//     consumer-group offsets and SASL users, and reloads them on the next
//     Start with the same directory. Writes are synced on Close (and on
//     segment roll), not per batch: a clean Close loses nothing, a crash of
//     the process may lose the most recent batches unless SyncWrites is set.
//   - The DataDir holds credentials: kfake writes the SASL users to it
//     (PLAIN passwords in clear text, SCRAM as salted hashes); it is created
//     0700. Users are not reloaded from it: Options.SASL alone decides who
//     may connect, also after a restart.
//   - With SASL users set, every connection must authenticate (PLAIN,
//     SCRAM-SHA-256 or SCRAM-SHA-512); with TLS set, every listener is TLS.
//   - Test helpers (a cluster closed by t.Cleanup with a ready client
//     config, a throwaway CA, a goroutine leak check) live in package
//     broker/brokertest, outside the production binary.
package broker
