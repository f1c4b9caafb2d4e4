//go:build !unix

package ledger

import "os"

// lockFile is a no-op where flock is unavailable: run one process per
// ledger file.
func lockFile(*os.File) error { return nil }
