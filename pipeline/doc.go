// Package pipeline is the runtime: the run loops that move messages from a
// message.Source through a Processor to message.Sinks, written against
// those interfaces only (it imports no Kafka client; internal/archtest
// holds that). The service around it — configuration, Kafka sources and
// sinks, the ledger backends, the aggregator lease, HTTP — is package app.
//
// Contract:
//   - Stream runs source -> processor -> sinks with at-least-once delivery:
//     a batch is acknowledged only after the outputs and dead letters of
//     every message in it are durable, and batches are acknowledged in the
//     order they were read. On cancellation it drains (bounded by
//     DrainTimeout): batches already read are written and acknowledged.
//     A processing error or panic dead-letters the message (no input stops
//     the stream); each sink is retried on its own until it has
//     everything; a message a sink refuses as too large
//     (message.ErrTooLarge) becomes a dead letter, or a reference.
//   - AggregatorRunner feeds an aggregators.Engine; offsets are
//     acknowledged only after a checkpoint that covers them, and messages
//     the restored checkpoint already counted are skipped.
//   - Lifecycle: Stream.Run connects its sinks first and its source last
//     (message.Source.Connect / message.Sink.Connect), retrying while they
//     fail; the read loop connects the source again after a read error
//     marked message.ErrNotConnected. Whoever opened a source or sink
//     closes it (the app, `dpsurv sanitize`), after the run loop returned.
//   - Both share one read loop (readLoop): a connect or read error marked
//     message.ErrEndOfInput or message.ErrFatal, or wrapping ErrStop, ends
//     the run; any other is retried with internal/retry's backoff. A sink
//     error marked message.ErrFatal ends the run too.
//   - SanitizeProcessor validates, sanitizes and encodes one input message;
//     it never fails on input (bad rows and messages a later stage cannot
//     handle are dead-lettered with a reason) and never copies an input key
//     or header to the sanitized topic (SanitizedKey, HeaderSource). The
//     same Stream and SanitizeProcessor run `dpsurv sanitize` over a file:
//     the file source (package files) is the processor's Decoder, so both
//     paths share validation's output, the sanitizer chain and the
//     dead-letter encoding.
//   - Metrics are registered on an injected registry; labels never carry
//     record values.
package pipeline
