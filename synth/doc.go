// Package synth generates synthetic EHR time-to-event cohorts for the demo,
// the benchmarks and tests: Weibull event times per cohort with an age
// effect, independent exponential censoring and administrative censoring at
// the public time bound. No real patient is involved.
package synth
