// Package harness holds process wiring shared by the demo, the benchmark
// and the end-to-end tests: producing a cohort onto the input topic as
// Arrow IPC messages and collecting what comes out of a topic.
package harness
