// Package message is the runtime's view of a transport: a neutral Message
// (key, value, headers and the position it was read from), the Source and
// Sink interfaces the pipeline is written against, and the sentinel errors
// by which a source or sink tells the runtime what to do. It imports no
// client library: Kafka (sources, sinks), files and in-memory test doubles
// implement it, and convert their own header and error types at the edge.
//
// Contract:
//   - Lifecycle (as Benthos' inputs and outputs): the runtime connects its
//     sinks first and its source last, with Connect, before using them,
//     retrying with backoff while Connect fails (an error marked ErrFatal
//     ends the run instead); it connects a source again after a read error
//     marked ErrNotConnected. Whoever opened a source or sink closes it.
//   - A Source returns batches with the function that acknowledges them.
//     The caller acknowledges a batch only after every output derived from
//     it is durable, and acknowledges batches in the order they were read
//     (an acknowledgement may imply every earlier one, as Kafka's offsets
//     do). Delivery is at least once.
//   - A read error wrapping ErrEndOfInput or ErrFatal ends the run: the
//     runtime returns an error wrapping it and acknowledges nothing more
//     (what was read but not acknowledged is redelivered to the next
//     reader). Any other read error (ErrNotConnected, for example) is
//     transient and the runtime reads again after a backoff.
//   - Sink.Write returns nil only once every message is durable. A write
//     error wrapping ErrTooLarge means a message can never be written (the
//     runtime dead-letters it instead of retrying); one wrapping ErrFatal
//     (a file sink's disk error) stops the run; any other error is
//     retried.
//   - Mark adds a sentinel to an error without changing its text.
package message
