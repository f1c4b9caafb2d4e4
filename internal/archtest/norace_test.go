package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

// sequential are the packages `make test` runs once without -race (its
// stats step) instead of under the race detector (its unit step): number
// crunching that starts no goroutine, in its code or its tests, so the
// detector has nothing to find there while it slows them tenfold.
var sequential = []string{"dp", "dpfit", "dpfit/km", "cmd/dpsurv-eval/eval", "cmd/dpsurv-eval/inference"}

// The packages run without -race start no goroutine, and the Makefile's
// list of them is this one: a goroutine added to one of them moves the
// package back under -race (delete it here and in the Makefile).
func TestSequentialPackagesStartNoGoroutine(t *testing.T) {
	root := filepath.Dir(datasets.Dir(t))
	for _, pkg := range sequential {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", pkg, err)
		}
		fset := token.NewFileSet()
		for _, f := range files {
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: a go statement in a package run without -race: run %s under -race again (Makefile unit, sequential in %s)",
						fset.Position(g.Pos()), pkg, "internal/archtest/norace_test.go")
				}
				return true
			})
		}
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^SEQUENTIAL := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no SEQUENTIAL := line")
	}
	got := strings.Fields(string(m[1]))
	if !slices.Equal(got, sequential) {
		t.Fatalf("Makefile SEQUENTIAL %v, want %v (this test's list)", got, sequential)
	}
}
