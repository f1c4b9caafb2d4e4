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
//   - At most one release per key, under any fault. The first value of a
//     key in log order is its release: the one every reader counts and the
//     only one ever returned for publication. On a backend whose writes can
//     land late or come from a second writer (Tailer: Kafka), Release
//     reads the log on to its end before drawing (a key another writer
//     released is replayed, not drawn), and every Append is followed by
//     reading the log back to its end, and Release returns
//     the key's first value — an earlier, late-landed value wins over the
//     one just written. Every further distinct value of a key found in the
//     log is charged as well (it is a noisy output stored on the ledger)
//     and counted in dpsurv_ledger_superseded_total; byte-identical repeats
//     count once.
//   - Spent budget is recomputed from the persisted entries on Open: a
//     restart never refills it. The spent and remaining epsilon per scope
//     are Prometheus gauges (dpsurv_privacy_budget_spent,
//     dpsurv_privacy_budget_remaining).
//   - Composition is additive per scope. Callers express parallel
//     composition by charging one entry to several scopes (a window's
//     release over disjoint cohorts is one entry charging epsilon to
//     "stream", "aggregate:<name>" and each "cohort:<label>").
//   - Backends: File (append-only JSON lines, fsync per append, torn last
//     line cut off on open, flock against a second process) and, in package
//     kafkaledger (so this package never imports a Kafka client), Kafka (a
//     single-partition topic that is NEVER compacted and keeps records
//     forever — cleanup.policy=delete, retention.ms=-1; a compacted or
//     expiring topic is refused, since compaction keeps the last record of
//     a key and expiry would refill the budget — written with acks=all,
//     read from start to end on open and tailed after every append;
//     records above kafkaledger.ChunkBytes are chunked under a Kafka key that carries
//     the entry's hash, so chunks of two values of a key never mix).
//   - StateStore keeps the aggregators' checkpoint next to the ledger:
//     FileState (write, fsync, rename) and kafkaledger.State (two
//     alternating slots plus a checksummed head record).
//   - One writer per ledger: a second process on the same ledger would
//     double-spend. The file backend enforces it with a lock; on Kafka the
//     aggregators run in the one replica holding the lease, and a former
//     holder's late write cannot publish a second value (read-back above).
//   - The stored releases are DP outputs; the snapshots hold exact counts
//     and are as sensitive as the input topic.
package ledger
