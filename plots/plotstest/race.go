//go:build race

package plotstest

// raceDetector is true when the tests run under the race detector.
const raceDetector = true
