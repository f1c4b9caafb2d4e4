// Package sanitize is the sanitizing processor of `dpsurv run` and
// `dpsurv sanitize`: a pipeline.Processor that validates, sanitizes and
// encodes each input message, and the dead-letter encoding and failure
// routes around it. The runtime (package pipeline) knows none of it: it
// writes what the processor routes to the sink of each route name.
//
// Contract:
//   - Processor routes sanitized Arrow batches to RouteOutput and dead
//     letters to RouteDeadLetter; it never fails on input (bad rows and
//     messages a later stage cannot handle are dead-lettered with a
//     reason) and never copies an input key or header to the sanitized
//     topic (SanitizedKey, HeaderSource; the W3C trace context only, see
//     TraceContext). Every routed message carries the input records it
//     stands for (Rows): their sum is the records decoded from the input
//     message, good and bad.
//   - Every message it writes is at most MaxMessageBytes: a sanitized
//     batch is split, a dead letter cut down to a reference to its source
//     position ("topic/partition/offset", the dpsurv-source header).
//   - DeadLetters is the stream's pipeline.Failures: a message the
//     processor failed on becomes an unprocessable dead letter, an output
//     the sink refuses as too large an output_too_large dead letter, a
//     refused dead letter a reference.
//   - Metrics.Acked is the stream's OnAck: records are counted once their
//     batch is acknowledged, so records_in = records_out +
//     dead_letter_rows. Labels never carry record values.
//   - The same Processor runs `dpsurv sanitize` over a file: the file
//     source (package files) is its Decoder, so both paths share
//     validation's output, the sanitizer chain and the dead-letter
//     encoding.
package sanitize
