//go:build unix

package benchtest

import "syscall"

// ProcessCPU is the process's user + system CPU time in nanoseconds.
func ProcessCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
