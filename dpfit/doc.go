// Package dpfit holds the central differentially private fits: the
// noisy-histogram Kaplan–Meier (and the LNTE baseline), log-rank from noisy
// counts, the binary-tree counter for continual release, and the DP Weibull
// fits (LSP + TLL, with the Laplace and sample-and-aggregate baselines). Each
// result states its epsilon, neighbouring relation and kind of guarantee.
package dpfit
