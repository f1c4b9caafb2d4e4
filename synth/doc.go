// Package synth generates synthetic EHR time-to-event cohorts for the demo,
// the benchmarks and tests: Weibull event times per cohort with an age
// effect, independent exponential censoring and administrative censoring at
// the public time bound; and DiscreteWorld, the discrete-time regression
// world the inference studies and the regression tests draw from. No real
// patient is involved.
package synth
