// Package kafkaledger is the privacy ledger's Kafka backend: Backend (a
// ledger.Backend and ledger.Tailer) and State (a ledger.StateStore), each
// on its own topic. It is kept out of package ledger so that the budget
// logic, and the aggregators that import it, never import a Kafka client.
//
// Contract:
//   - The ledger topic has one partition, cleanup.policy=delete and
//     unlimited retention; Open creates it or refuses an existing topic
//     that is compacted or expires records, naming the setting to change.
//   - Writes use acks=all and the writer's own Transport; records above
//     ChunkBytes are split into chunks under a key that carries the entry's
//     hash, so chunks of two values of a key never mix; a torn write (chunks
//     without their end) is ignored on load.
//   - Backend.Load reads the topic from start to end; Tail reads what was
//     appended since; the first complete entry of a key in offset order is
//     the one the ledger counts.
//   - State writes each snapshot into one of two alternating slots, then a
//     head record with its sequence number and SHA-256; Load trusts only a
//     head whose chunks are complete and match.
package kafkaledger
