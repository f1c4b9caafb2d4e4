// Package aggregators assigns validated records to windows, keeps compact
// sufficient statistics per (time bin, cohort) and produces the DP releases
// (Kaplan–Meier, Weibull, regression) of each window, charging the privacy
// ledger before anything is written.
package aggregators
