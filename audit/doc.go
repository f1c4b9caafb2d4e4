// Package audit measures what a sanitized time-to-event release leaks and
// what it costs, following paper 001 (section II-C, III-A) and
// mechanisms.md §7:
//
//   - CohortInference: the cohort inference attack. An informed adversary
//     knows a target's true time t and the mechanism; it scores every cohort
//     c by CL(c, t) = sum over t̂ of P(c | t̂) P(t̂ | t), with P(c | t̂) read
//     off the sanitized data and P(t̂ | t) the mechanism's exact pmf
//     (Kernel). On a balanced test set drawn from the original data (the
//     same number from every cohort, 100 by default) the targets whose score
//     for c is at or above the 95% quantile of the set's scores are assigned
//     to c; the precision per cohort is summarised over resamples (100 by
//     default). The non-private reference uses CL(c, t) = P(c | t) from the
//     original data, on the same test sets.
//   - Measure: utility of the sanitized data per cohort — KL divergence of
//     the time histograms, the distributional MAE (Wasserstein-1 distance:
//     the mean absolute difference of quantile-matched times), the log-rank
//     statistic of the sanitized against the original KM curve, and the
//     shift of the KM median. With the PRF key the records can be joined by
//     recomputing pseudonyms, and PerRecordMAE gives the per-record MAE.
//
// Contract: this is the auditor's tool and reads the original data, so it
// is non-private by design; its output must not be published as a DP
// release. Only the resampling draws randomness, from the dp.Source the
// caller passes (seeded for reproducible evaluation tables, secure
// otherwise). Errors name the operation and never carry record values.
package audit
