// Package ops holds the operations tooling: the load test behind `dpsurv
// loadtest`, and the helpers the fault tests use to check a sanitized topic
// against a reference, to inspect a consumer group and to inject slow or
// failing sinks. Its tests include the kill -9 tests of two `dpsurv run`
// processes (kill_test.go: the sanitizing stream; kill_agg_test.go: the
// aggregators' lease holder) and the aggregators across a broker restart.
//
// Contract:
//   - RunLoad is bounded in time and runs on loopback only: an embedded
//     broker, N in-process services in one consumer group, a producer and a
//     consumer of the sanitized topic, all in this process. It accounts for
//     every produced record (lost, duplicated, duplicates identical), reports
//     throughput, end-to-end latency per record (fixed-rate mode) and memory
//     sampled over the run, and flags live-heap growth (AnalyzeGrowth).
//     Memory figures include the embedded broker, whose topics are capped by
//     retention.bytes in fixed-rate mode; the accounting keeps one bit per
//     message, so a long run's own bookkeeping stays near constant.
//   - The latency of a record is the time from just before its message is
//     produced to its receipt by the sanitized-topic consumer: the producer
//     puts "seq/records/unix-nanos" in the message key, which the service
//     copies to the sanitized message. No record value is logged or printed.
//   - Histogram keeps constant memory; a quantile is its bucket's upper edge,
//     at most 2 % above the exact order statistic and never below it.
//   - SlowSink and TrackedSource are wrappers for tests: a sink that is slow
//     and can fail after a partial write (the source of redelivered
//     duplicates), and a source that counts batches in flight (read, not yet
//     acknowledged) to show that backpressure bounds them.
//   - Reference sanitizes input with one in-process chain (config and key
//     as the service's) and CollectExact reads a sanitized topic until every
//     record has arrived, failing with ErrMismatch when a record differs from
//     the reference or a redelivered message (same dpsurv-source header) is
//     not byte-identical to its first copy. Together they are the fault
//     tests' "nothing lost, duplicates identical".
//   - GroupLag reads a consumer group's committed offsets against the
//     topic's end (members and assignments: kafkaconn.DescribeGroup and
//     kafkaconn.WaitForGroup). It changes nothing.
//   - ReadTopic and ReadLedger read a topic (every partition, to its end
//     as of the call) and a Kafka ledger (every entry, repeats included);
//     CheckReleases holds a fit topic and a ledger to the release contract
//     of docs/aggregators.md — one ledger entry per released window (a
//     repeated append identical), each fit message equal to the ledger's
//     stored copy (so a key always carries the same bytes), the charges
//     adding up to every budget_remaining.stream — and fails with
//     ErrReleases. It is the aggregator fault tests' "no window released
//     twice, ledger totals unchanged" (kill_agg_test.go: kill -9 of the
//     lease holder, a broker restart).
//   - Randomness (SlowSink jitter) comes only from a dp.Source.
package ops
