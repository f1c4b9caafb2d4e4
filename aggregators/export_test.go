package aggregators

// SetBuildFault makes release builds of non-counter kinds fail after their
// noise is drawn, for the tests of package aggregators_test; the returned
// function restores normal builds.
func SetBuildFault(f func() error) (restore func()) {
	buildFault = f
	return func() { buildFault = nil }
}
