// Package app is the service wiring of `dpsurv run`: the YAML
// configuration (validated with field-path errors), the Kafka sources and
// sinks, the ledger backend (ledger.file or the uncompacted ledger.topic),
// the aggregator lease, the lag and stall monitor, the Prometheus series
// and the /healthz, /readyz and /metrics endpoints, around the run loops of
// package pipeline. Kafka is allowed here (it is the edge); the runtime is
// not.
//
// Contract:
//   - Service.Run starts sinks first and the source last, and stops in
//     reverse with a drain. A broker that refuses the connection or the
//     credentials leaves the service running but not ready, retrying with
//     backoff, rather than crash-looping.
//   - A source offset is committed only after every branch that received
//     the batch has acknowledged it (pipeline.Stream).
//   - With aggregators configured, Run also runs a pipeline.AggregatorRunner
//     in its own consumer group on the input topic (<group_id>-agg), with
//     releases charged to the privacy ledger and published on
//     output.fit_topic (JSON) and the curve topic (Arrow). In Kafka-ledger
//     mode only the replica holding the aggregator lease (a sticky
//     one-partition consumer group) aggregates; the others sanitize and
//     stand by. See docs/aggregators.md.
//   - /readyz is false while starting, while a read or write fails, while
//     an input partition is stalled (any replica's), and from the moment
//     shutdown begins.
package app
