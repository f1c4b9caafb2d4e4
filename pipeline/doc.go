// Package pipeline wires sources, validation, sanitizers, sinks and
// aggregators into one service: YAML configuration validated with field-path
// errors, lifecycle (sinks start first, sources last; stop in reverse with a
// drain), backpressure, acknowledgement (a source offset is committed only
// after every branch that received the batch has acknowledged it), Prometheus
// metrics and the /healthz and /readyz endpoints.
//
// With aggregators configured, Service.Run also runs an AggregatorRunner: its
// own consumer group on the input topic (<group_id>-agg) feeding an
// aggregators.Engine, offsets committed only after a checkpoint that covers
// them, releases charged to the privacy ledger (ledger.file or the uncompacted
// ledger.topic) and published on output.fit_topic (JSON) and the curve topic
// (Arrow). In Kafka-ledger mode only the replica holding the aggregator
// lease (a sticky one-partition consumer group) aggregates; the others
// sanitize and stand by. See docs/aggregators.md.
//
// The run loops (Stream, AggregatorRunner) are written against
// message.Source and message.Sink and share one read loop (readLoop: a
// read error marked message.ErrEndOfInput or message.ErrFatal, or wrapping
// ErrStop, ends the run; any other is retried with internal/retry's
// backoff). A sink error marked message.ErrFatal ends the run too. The
// same Stream and SanitizeProcessor run `dpsurv sanitize` over a file: the
// file source (package files) is the processor's Decoder, so both paths
// share validation's output, the sanitizer chain and the dead-letter
// encoding.
package pipeline
