package doccmd

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/dpsurv/dpsurv/internal/testtier"
)

// TestBenchStreamScriptWritesItsTable runs scripts/bench_stream.sh (the
// stream table of docs/performance.md, skipped by the document test for its
// length) for one short run at a low rate and checks the table it prints:
// one row with every column a number, nothing lost. No latency is asserted
// (the machine is shared); what fails here is the script's reading of
// `dpsurv loadtest --json`.
func TestBenchStreamScriptWritesItsTable(t *testing.T) {
	testtier.Full(t, "builds dpsurv and streams for two seconds")
	root := repoRoot(t)
	cmd := exec.Command(filepath.Join(root, "scripts", "bench_stream.sh"), "5000", "2s", "1")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench_stream.sh: %v\n%s", err, out)
	}
	row := regexp.MustCompile(`(?m)^\| 1 \| [0-9.]+–[0-9.]+ \| [0-9]+ \| [0-9]+ \| 0 \| [0-9.]+ ms \| [0-9.]+ ms \| \*\*[0-9.]+ ms\*\* \| [0-9]+ ms \|$`)
	if !row.Match(out) {
		t.Fatalf("no table row with numbers and 0 lost in:\n%s", out)
	}
}
