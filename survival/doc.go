// Package survival holds the non-private survival estimators (the
// epsilon = inf path and the reference of every test): Kaplan–Meier with
// Greenwood errors and log-transformed confidence intervals, median survival,
// log-rank tests and the Weibull maximum-likelihood fit. They agree with R's
// survival package (golden files in testdata/, written by
// scripts/golden_km.R and the Weibull script).
//
// Kaplan–Meier (KaplanMeier, KaplanMeierFromCounts) reproduces
// survfit(Surv(time, event) ~ 1, conf.type = "log"): one row per distinct
// time with n.risk, n.event, n.censor, surv, std.err and the interval.
// std.err keeps R's meaning — the standard error of the cumulative hazard
// -log S (Greenwood), not of S — and is +Inf once S reaches 0, where the
// interval is NA. The median and its interval follow quantile(fit, 0.5)
// (flat segments at 0.5 give the segment's midpoint, a curve that never
// reaches 0.5 gives NA); KMCurve.SummaryMedian gives print(fit)'s variant.
// NaN stands for NA throughout.
//
// Log-rank (LogRankTest, LogRankFromCounts, and the Pairwise variants)
// reproduces survdiff (rho = 0): chi-square over groups with a positive
// expected count, df = their number - 1, p from the chi-square upper tail;
// pairwise tests are survdiff on each two-group subset.
//
// The *FromCounts functions accept non-integer counts (weights, debiased or
// post-processed noisy counts), which is how dpfit draws its private curves.
// Inputs are validated (finite, non-negative times; consistent counts) and
// errors name the operation; nothing panics on bad input. Record inputs with
// integer times take a counting path, others a radix sort: both linear.
package survival
