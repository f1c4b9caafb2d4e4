package aggregators

import "time"

// SetBuildFault makes release builds of non-counter kinds fail after their
// noise is drawn, for the tests of package aggregators_test; the returned
// function restores normal builds.
func SetBuildFault(f func() error) (restore func()) {
	buildFault = f
	return func() { buildFault = nil }
}

// SetPatientBounds lowers MaxPatientsPerWindow and MaxPatientsPerHorizon
// for a test; the returned function restores them.
func SetPatientBounds(window, horizon int) (restore func()) {
	w, h := maxPatientsPerWindow, maxPatientsPerHorizon
	maxPatientsPerWindow, maxPatientsPerHorizon = window, horizon
	return func() { maxPatientsPerWindow, maxPatientsPerHorizon = w, h }
}

// SetFitGate calls f before each window fit (on the goroutine that runs
// it) with the aggregate's name and the window's start; the returned
// function removes it.
func SetFitGate(f func(aggregate string, start time.Time)) (restore func()) {
	fitGate = func(a string, s int64) { f(a, time.Unix(0, s).UTC()) }
	return func() { fitGate = nil }
}
