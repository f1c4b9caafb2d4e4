// Package dpfit holds what the central differentially private fit
// families share; the families are its subpackages: dpfit/km (Kaplan–Meier,
// LNTE, log-rank, the tree counter) and dpfit/weibull (the DP Weibull
// fits).
//
// Contract: BinomialSim (and BinomialProb, the same draws with a
// probability's logarithm taken once) draws exact Binomial(n, p) variates
// for the interval and null simulations, which are post-processing of a
// release (never a release: the private paths use dp's exact lattice
// samplers); LowInformationThreshold, MinInformativeN and
// LowInformationSDs are the public low-information rule both families
// apply to a cohort's noisy record count; PValueBound splits a Monte-Carlo
// p-value at its floor into a released bound. Nothing here sees a record.
// All randomness comes from the generator passed in.
package dpfit
