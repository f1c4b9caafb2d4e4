// Package ledger is the privacy ledger: every release is charged before it
// is written, a total budget per scope is enforced, and a release already
// made is stored so that a replayed window re-emits it instead of drawing
// fresh noise.
//
// Contract:
//   - Ledger.Release(key, scopes, epsilon, build) is the only way to make a
//     release. A key already in the ledger returns its stored bytes
//     (replay = true) and build — which draws the noise — is not called;
//     nothing is charged. A new key is checked against the budget of every
//     scope it names (Options.Budget; a scope without a budget is
//     unlimited); a charge that would exceed one returns a *BudgetError
//     wrapping ErrBudgetExceeded, naming the scope, before build is called.
//     Otherwise build gets the budget that will remain, its JSON is stored
//     durably (Backend.Append returns only once persisted) and only then
//     returned for publication, in canonical form (compact, as encoding/json
//     writes it) so that replays are byte-identical. A failed Append may
//     still have persisted its entry (a lost acknowledgement): the next
//     Release reloads the backend first, and an entry found there stands
//     and is replayed — a retried window is never drawn or charged twice.
//   - Spent budget is recomputed from the persisted entries on Open: a
//     restart never refills it. The spent and remaining epsilon per scope
//     are Prometheus gauges (dpsurv_privacy_budget_spent,
//     dpsurv_privacy_budget_remaining).
//   - Composition is additive per scope. Callers express parallel
//     composition by charging one entry to several scopes (a window's
//     release over disjoint cohorts is one entry charging epsilon to
//     "stream", "aggregate:<name>" and each "cohort:<label>").
//   - Backends: File (append-only JSON lines, fsync per append, torn last
//     line cut off on open, flock against a second process) and Kafka (a
//     compacted single-partition topic written with acks=all, read from
//     start to end on open; records above ChunkBytes are chunked).
//   - StateStore keeps the aggregators' checkpoint next to the ledger:
//     FileState (write, fsync, rename) and KafkaState (two alternating slots
//     plus a checksummed head record).
//   - One writer per ledger: a second process on the same ledger would
//     double-spend. The file backend enforces it with a lock; on Kafka the
//     aggregators must run in exactly one replica.
//   - The stored releases are DP outputs; the snapshots hold exact counts
//     and are as sensitive as the input topic.
package ledger
