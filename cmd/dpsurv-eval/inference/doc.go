// Package inference holds the simulation studies of the private releases'
// intervals and tests (issue 12): coverage of the noise-aware Kaplan–Meier
// pointwise intervals and median intervals, and the size and power of the
// calibrated DP log-rank test, and coverage of the noise-aware Weibull
// shape/scale intervals (weibull.go), on a bootstrap world built from a
// dataset (flchain in the tests and in docs/inference.md).
//
// Contract: every study is a pure function of its data and configuration
// (seeded sources; no clock, no network); the package tests run short
// versions with stated binomial tolerances and the full versions outside
// -short; `dpsurv-eval inference` and `dpsurv-eval inference-weibull` write
// docs/inference.md from the same functions. Nothing here is on a private path: the studies use the truth,
// which a release never sees.
package inference
