package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/gofiles"
)

// sequential are the packages `make test` runs once without -race (its
// stats step) instead of under the race detector (its unit step): number
// crunching whose code and tests start no goroutine, so the detector has
// nothing to find there while it slows them tenfold, except the packages
// in raced.
var sequential = []string{"dp", "dpfit", "dpfit/km", "dpfit/weibull", "cmd/dpsurv-eval/eval", "cmd/dpsurv-eval/inference", "plots", "regression"}

// raced are the sequential packages whose code starts goroutines, with the
// tests that run that code on several goroutines: the Makefile's RACED
// runs them under -race in its unit step.
var raced = map[string][]string{
	"dpfit/weibull": {"TestWeibullIntervalEarlyAcceptance"},
	// each of regression's go statements on two or more goroutines:
	// newCoxData's means (cox.go) and the Cox workers (cox_eval.go) in
	// TestCoxEvalWorkers, the Cox scatter (cox_eval.go, 699,051 rows) in
	// TestCoxManyRunsScan, parallelReps (evaluate.go) in
	// TestParallelRepsDeterministic, the clipped sums
	// (noisynewton_sums.go) and their per-pattern form
	// (noisynewton_patterns.go) in TestNewtonCompactSums,
	// accumulateShares (model.go, 20,000 records) in
	// TestFitDiscreteGroupedMatchesRecords
	"regression": {"TestCoxEvalWorkers", "TestCoxManyRunsScan", "TestParallelRepsDeterministic",
		"TestNewtonCompactSums", "TestFitDiscreteGroupedMatchesRecords"},
}

// The packages run without -race start no goroutine, or are raced and
// start them only in production code whose named tests exist (and run
// under -race); the Makefile's lists are these.
func TestSequentialPackagesStartNoGoroutine(t *testing.T) {
	root := gofiles.Root(t)
	for _, pkg := range sequential {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", pkg, err)
		}
		fset := token.NewFileSet()
		tests := map[string]bool{}
		for _, f := range files {
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			isTest := strings.HasSuffix(f, "_test.go")
			for _, d := range file.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && isTest && fd.Recv == nil {
					tests[fd.Name.Name] = true
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				g, ok := n.(*ast.GoStmt)
				if !ok {
					return true
				}
				if _, ok := raced[pkg]; !ok || isTest {
					t.Errorf("%s: a go statement in a package run without -race: run %s under -race again (Makefile unit, sequential in %s) or name the tests that run it in raced",
						fset.Position(g.Pos()), pkg, "internal/archtest/norace_test.go")
				}
				return true
			})
		}
		for _, name := range raced[pkg] {
			if !tests[name] {
				t.Errorf("raced: %s has no test %s", pkg, name)
			}
		}
	}
	for pkg := range raced {
		if !slices.Contains(sequential, pkg) {
			t.Errorf("raced: %s is not sequential (it runs under -race whole)", pkg)
		}
	}
	// The Makefile orders them longest first (go test starts them in
	// that order); the set is what must agree.
	got := strings.Fields(gofiles.MakeVar(t, "SEQUENTIAL"))
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(sequential))) {
		t.Fatalf("Makefile SEQUENTIAL %v, want %v (this test's list)", got, sequential)
	}
	gotRaced := map[string][]string{}
	for _, f := range strings.Fields(gofiles.MakeVar(t, "RACED")) {
		pkg, tests, _ := strings.Cut(f, "=")
		gotRaced[pkg] = strings.Split(tests, "|")
	}
	if len(gotRaced) != len(raced) {
		t.Fatalf("Makefile RACED %v, want %v (this test's map)", gotRaced, raced)
	}
	for pkg, tests := range raced {
		if !slices.Equal(gotRaced[pkg], tests) {
			t.Errorf("Makefile RACED %s=%v, want %v", pkg, gotRaced[pkg], tests)
		}
	}
}
