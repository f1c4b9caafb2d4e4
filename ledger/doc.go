// Package ledger is the privacy ledger: every release is charged before it
// is written, a total budget per scope is enforced, and a release already
// made is stored so that a replayed window re-emits it instead of drawing
// fresh noise. It persists to a file or a compacted Kafka topic.
package ledger
