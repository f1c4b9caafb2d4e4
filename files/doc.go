// Package files is the file edge of the runtime: a message.Source that
// reads a CSV, Arrow IPC or JSON-lines file and message.Sinks that write
// the sanitized stream and its dead letters to files, so that
// `dpsurv sanitize` runs the stream's processor (sanitize.Processor
// in a pipeline.Stream) instead of a loop of its own.
//
// Contract:
//   - Source decodes and validates the file itself (schemas.ReadFile:
//     lenient CSV cells, row indices over the whole file, duplicate ids
//     detected across the whole file), one message per batch of rows. A
//     message stands for its decoded batch: Topic is the file's base
//     name, Partition 0, Offset the batch number (from 0), Value empty;
//     Source.Decode (a sanitize.Decoder) hands the processor that batch
//     once. The decoded batch rather than an Arrow IPC encoding of the
//     rows is the message because the file-wide rules above cannot be
//     applied one message at a time, and a CSV row that fails to parse
//     has no Arrow form to carry.
//   - After the last batch, ReadBatch waits until every batch it returned
//     is acknowledged, then returns an error marked message.ErrEndOfInput
//     (the run ends with nothing in flight). A read error (I/O, a corrupt
//     Arrow file, a missing header) is marked message.ErrFatal.
//   - RecordSink decodes each message (Arrow IPC) and writes its records
//     with schemas.FileWriter (the format chosen by the extension, input
//     column names restored, the .meta.json sidecar for text outputs);
//     LineSink writes each message value as one line (the dead-letter
//     file), creating its file on the first write. Every write error is
//     marked message.ErrFatal: a file write is not retried.
package files
