// Package kafkaconn holds the connection settings shared by every Kafka
// client in dpsurv (brokers, client id, TLS, SASL) and turns them into
// kafka-go Dialers (readers, admin conns) and Transports (one per writer).
//
// Contract:
//   - Validate is static (no I/O) and names the offending field relative to
//     "kafka.", e.g. "kafka.sasl.password_file: required when mechanism is
//     set". Files (CA, certificate, key, password) are read by Dialer,
//     Transport, CheckConnection and EnsureTopics; their errors name the
//     field too.
//   - The SASL password comes from Password when set (tests) or else from
//     PasswordFile, trailing newline removed; it is never logged or put in an
//     error message.
//   - Transport returns a new *kafka.Transport on every call: a writer must
//     not share one (a shared transport caches topic metadata for seconds).
//     The caller closes it with CloseIdleConnections.
//   - CheckConnection dials and fetches metadata; a rejected credential
//     yields an error starting "kafka authentication failed:" (ErrAuth), a
//     failed TLS handshake one wrapping ErrTLS, both within the context's
//     deadline and the dial timeout. Classify applies the same wrapping to
//     reader and writer errors (a reader's rejected credential is ErrAuth;
//     a writer's Transport sees kfake closing the connection as a bare EOF,
//     so run CheckConnection at start-up).
//   - EnsureTopics creates missing topics (replication factor: the broker
//     default) and leaves existing ones untouched; it is idempotent. When
//     the broker will not create them (no CreateTopics API, as librdkafka's
//     mock cluster, or a refusal) it returns a *MissingTopicsError naming
//     them, for the caller to report and retry.
//   - GroupLag compares a group's committed offsets with each partition's
//     last stable offset (what a read_committed consumer can reach).
//   - DescribeGroup and WaitForGroup read a consumer group's members and
//     their assignments for one topic from the coordinator; they change
//     nothing.
//   - SASL PLAIN without TLS sends the password in clear text: acceptable
//     only on loopback or a trusted network.
package kafkaconn
