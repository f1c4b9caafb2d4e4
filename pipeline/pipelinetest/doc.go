// Package pipelinetest builds input messages for the tests of the runtime
// (pipeline) and of the service (app): valid Arrow rows with chosen ids,
// and the malformed message class fuzzing found; a settable clock for
// window tests. It is imported by tests only.
package pipelinetest
