//go:build !unix

package budgetfile

import (
	"errors"
	"os"
)

// lock is not implemented here: a budget file needs a file lock to be
// safe against two fits at once, so it is refused rather than unsafe.
func lock(*os.File) error {
	return errors.New("budget files need flock (unix); not supported on this platform")
}

func unlock(*os.File) error { return nil }
