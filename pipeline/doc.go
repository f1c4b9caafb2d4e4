// Package pipeline is the runtime: the run loops that move messages from a
// message.Source through a Processor to the sinks of named routes, written
// against those interfaces only. It imports message and retry and
// nothing else of ours (no Kafka client, no codec, no sanitizer;
// internal/archtest holds that). The sanitizing processor is package
// processors/sanitize; the service around it — configuration, Kafka
// sources and sinks, the ledger backends, the aggregator lease, HTTP — is
// package app.
//
// Contract:
//   - Processor: Process(ctx, msg) returns the messages msg gives, each
//     tagged with its route (Routed); Stream.Routes maps route names to
//     sinks. There is no fixed output or dead-letter sink: a failed
//     message is routed too. When Process returns an error or panics (or
//     names a route the stream does not have), Stream.Failures.Failed
//     routes the message instead; when a sink refuses a message as too
//     large (message.ErrTooLarge), Failures.Rejected routes what stands
//     for it. No input stops the stream.
//   - Stream runs source -> processor -> routes with at-least-once
//     delivery: a batch is acknowledged only after every message routed
//     from it (failure routes included) is durable in its sink, and
//     batches are acknowledged in the order they were read. On
//     cancellation it drains (bounded by DrainTimeout): batches already
//     read are written and acknowledged. Each route's sink is retried on
//     its own until it has everything. OnAck then sees every message
//     written for the batch (the processor's accounting).
//   - AggregatorRunner feeds an Aggregator (aggregators.Feed in the
//     service); offsets are acknowledged only after a checkpoint that
//     covers them, and messages the restored checkpoint already counted
//     are skipped.
//   - Lifecycle: Stream.Run connects its sinks first (by route name) and
//     its source last (message.Source.Connect / message.Sink.Connect),
//     retrying while they fail; the read loop connects the source again
//     after a read error marked message.ErrNotConnected. Whoever opened a
//     source or sink closes it (the app, `dpsurv sanitize`), after the run
//     loop returned.
//   - Both share one read loop (readLoop): a connect or read error marked
//     message.ErrEndOfInput or message.ErrFatal, or wrapping ErrStop, ends
//     the run; any other is retried with retry's backoff. A sink
//     error marked message.ErrFatal ends the run too.
//   - Metrics are the runtime's (messages in, batch latency, sink, read
//     and commit errors, lag, readiness), registered on an injected
//     registry; labels never carry record values.
package pipeline
