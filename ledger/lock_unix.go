//go:build unix

package ledger

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking advisory lock on f: a second
// process opening the same ledger fails instead of double-spending.
func lockFile(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("locked by another process")
		}
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}
