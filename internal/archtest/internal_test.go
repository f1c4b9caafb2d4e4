package archtest

import (
	"sort"
	"strings"
	"testing"
)

// internal/ holds the repository's own test machinery only — the
// structure and privacy checks, the documented-command runner, the test
// tiers and the data-set finder — so no production file of the module
// imports a package under internal/: the commands' code lives with the
// commands (cmd/...), utilities where their users are (retry, varint,
// buildinfo at the top, ops/harness with the operations tooling). A
// package that production code needs does not belong in internal/.
func TestInternalIsTestMachineryOnly(t *testing.T) {
	for _, p := range internalImports(moduleGraph(t)) {
		t.Error(p)
	}
}

// internalImports lists the production imports of an internal/ package
// by a package outside internal/ (graph: package -> its production
// imports of the module).
func internalImports(graph map[string][]string) []string {
	var problems []string
	for p, deps := range graph {
		if isInternal(p) {
			continue
		}
		for _, d := range deps {
			if isInternal(d) {
				problems = append(problems, "package "+show(p)+" imports "+d+" in production code: move "+d+" out of internal/ (next to its users) or import it from tests only")
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func isInternal(p string) bool { return p == "internal" || strings.HasPrefix(p, "internal/") }

// The checker itself: a production import of internal/ from outside is
// caught; imports inside internal/ and of other packages are not.
func TestInternalImportsCatches(t *testing.T) {
	if v := internalImports(map[string][]string{
		"internal/archtest": {"internal/datasets", "dp"},
		"app":               {"retry", "buildinfo"},
	}); len(v) != 0 {
		t.Errorf("allowed imports flagged: %v", v)
	}
	v := internalImports(map[string][]string{"app": {"retry", "internal/testtier"}})
	if len(v) != 1 || !strings.Contains(v[0], "package app imports internal/testtier") {
		t.Errorf("a production import of internal/testtier: %q, want one problem naming it", v)
	}
}
