//go:build unix

package budgetfile

import (
	"os"
	"syscall"
)

// lock takes an exclusive flock on f, waiting for it (EINTR retried).
func lock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
