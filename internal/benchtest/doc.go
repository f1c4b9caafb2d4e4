// Package benchtest holds what the benchmarks of several packages share:
// the process's CPU time (ProcessCPU) and the paired benchmark of a private
// fit beside its non-private twin (PairedRatio). It is test support:
// imported by test files only (internal/archtest checks that no production
// file imports internal/).
package benchtest
