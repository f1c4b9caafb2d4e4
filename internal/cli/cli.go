package cli

import (
	"fmt"
	"io"
)

// Main runs the dpsurv command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "usage: dpsurv demo|run|broker|sanitize|fit|audit|gen|bench")
	return 2
}
