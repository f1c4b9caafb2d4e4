// Package weibull holds the differentially private Weibull fits (paper 002,
// mechanisms.md section 4): LSP + TLL (FitWeibullLSP), with the Laplace and
// sample-and-aggregate baselines and the non-private MLE (FitWeibull picks
// by method); the noise-aware shape and scale intervals (WeibullIntervals);
// the low-information rule of a release (WeibullLowInformation); and
// Prepared, one sample normalised once for many releases (the evaluation's
// utility study, cmd/dpsurv-eval/eval, runs on it).
//
// Contract: input is survival.Compressed records with the public TimeMax,
// Omega and Gamma of WeibullConfig (no bound derived from the data); a time
// beyond TimeMax is censored at the horizon. LSP + TLL and the Laplace
// baseline are epsilon-DP under add/remove-one, SAA under replace-one (its
// record count is public); every WeibullFit states its epsilon, relation
// and kind of guarantee. Intervals and the low-information
// rule are post-processing of the released values. All randomness comes
// from a dp.Source passed in (exact lattice sampling on the private path).
package weibull
