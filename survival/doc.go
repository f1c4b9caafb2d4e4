// Package survival holds the non-private survival estimators (the
// epsilon = inf path and the reference of every test): Kaplan–Meier with
// Greenwood errors and log-transformed confidence intervals, median survival,
// log-rank tests and the Weibull maximum-likelihood fit. They agree with R's
// survival package (golden files in testdata/).
package survival
