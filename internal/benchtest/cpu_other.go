//go:build !unix

package benchtest

// ProcessCPU is not measured here (cpu-ns/op reads 0).
func ProcessCPU() int64 { return 0 }
