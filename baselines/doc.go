// Package baselines holds the two comparison methods of paper 001 as
// sanitizers, so that they can be audited side by side with TE-Sanitizer:
//
//   - BinSup(TimeBin, SizeBin): binning with suppression. Per cohort, the
//     records are counted in disjoint time bins of TimeBin units; a
//     (cohort, bin) count is released only when it is at least SizeBin,
//     otherwise the bin is released as 0 (its records are lost). Within a
//     released bin the event and censoring counts are released as they are.
//     Guarantee: none (heuristic) — it has no formal privacy.
//   - DPTime(epsilon, TimeBin): per cohort and bin, the event and the
//     censoring counts each get two-sided geometric noise of scale
//     2/epsilon (every record sits in one cell, so the histogram's L1
//     sensitivity under replace-one is 2; parallel composition over cells),
//     and negative noisy counts are set to 0 (post-processing; it adds
//     phantom records in empty bins, which is why DPTime distorts sparse
//     data — the behaviour the paper reports). Guarantee: pure-dp,
//     epsilon for the whole release, replace-one.
//
// Both release aggregate counts over the public domain [0, TimeMax] (a
// public bound: times above are clamped into the last bin, and the number
// clamped is reported) and regenerate records from them as the paper does:
// one record per released count, its time the start of the bin, its cohort
// and event flag those of the cell, its id a synthetic sequence number that
// links to no patient. The records have the sanitized-record layout of the
// sanitizers package (id utf8, time int64, event bool, cohort dictionary),
// with each field's mechanism and guarantee in the field metadata, so that
// `dpsurv audit` and every reader of sanitized files take them unchanged.
//
// Unlike TE-Sanitizer these are not per-record mechanisms: the whole
// dataset is counted first and released once (Sanitizer.Release may be
// called only once). DPTime's noise comes from the dp.Source passed in:
// dp.NewSecureSource() for a real release, a seeded source only for
// reproducible evaluations.
package baselines
