package aggregators

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
