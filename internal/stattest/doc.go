// Package stattest holds the goodness-of-fit arithmetic the statistical
// tests share: the one-sample Kolmogorov–Smirnov distance of a sample to an
// exact CDF and its asymptotic critical value, and Pearson's chi-square of
// counts against their expectations (small cells pooled) with its critical
// value. It is test support: only tests import it.
package stattest
