// Package regression holds survival regression: the discrete-time
// logistic model with a natural-cubic-spline baseline (non-private MLE and the
// DP methods of Nguyen & Hui) and Cox proportional hazards with Efron or
// Breslow ties, used on raw covariates or on HPPCox projections.
package regression
