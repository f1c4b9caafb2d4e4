// Package sources reads input messages: Kafka (a kafka-go consumer group
// with manual commits, fetching through kafka-go's protocol package) and
// files. A batch read from a source carries an Ack
// that commits it; callers ack only after every output derived from the batch
// is durable. Kafka implements message.Source: kafka-go headers become
// message.Header here, and read errors are marked for the runtime
// (message.ErrFatal for a rejected credential or TLS handshake,
// message.ErrNotConnected otherwise) without changing their text.
//
// Kafka contract:
//   - Connect dials a broker and authenticates (the reader itself connects
//     on its first fetch and redials by itself); its errors are marked as
//     ReadBatch's are.
//   - ReadBatch blocks until at least one message is available or ctx is
//     done (then it returns ctx.Err()); after the first message it waits at
//     most MaxWait for up to MaxBatch messages in total.
//   - Batch.Ack commits, for each partition in the batch, the offset after
//     its last message (synchronously: it returns once the coordinator has
//     accepted the commit). Kafka keeps one offset per partition, so acking a
//     batch also acks every earlier batch of the same partitions: ack batches
//     in the order they were read. An Ack that would move a partition's
//     offset backwards (an older batch acked after a newer one) is skipped.
//   - Delivery is at least once: whatever was read but not acked is read
//     again by the next owner of the partition (after a crash, Close, or a
//     rebalance). Duplicates are expected; the sanitizers' keyed PRF makes
//     them carry no extra privacy loss.
//   - An Ack after a rebalance took the partition away may fail (the
//     generation ended) or succeed; either way nothing is lost, the new owner
//     may see the messages again.
//   - Isolation is read_committed unless configured otherwise: the source
//     reads up to the last stable offset (a transaction still open holds
//     back what follows it), never returns a record of an aborted
//     transaction, and never returns a control record (the commit and
//     abort markers). It applies the Java client's algorithm to each fetch
//     response (decodeCommitted): aborted transactions per producer id
//     from the response, sorted by first offset; an abort marker ends its
//     producer's aborted range; records of transactional batches of a
//     producer in an aborted range are dropped. kafka-go's Reader cannot
//     do this (it drops the aborted-transaction list and surfaces control
//     records, upstream issue #1332), so the source runs kafka-go's
//     ConsumerGroup for membership and commits and one fetcher per
//     assigned partition on kafka-go's protocol/fetch.
//   - Skipped records are committed past: Ack commits, for a partition, past
//     the records skipped after the batch's last message; a fetch that held
//     only skipped records is committed at once when everything returned
//     before it is acknowledged (else by the Ack that acknowledges it), so
//     a trailing marker never leaves lag of 1.
//   - Lag is best effort: per partition, the last stable offset (the high
//     watermark with read_uncommitted) minus the offset after the last
//     message returned, summed over the partitions of the current
//     generation. Unstable counts the records past the last stable offset
//     (an open transaction and what follows it), which are not lag.
//   - Record values are never logged.
package sources
