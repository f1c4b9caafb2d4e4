//go:build !race

package testtier

// Race is true when the tests run under the race detector.
const Race = false
