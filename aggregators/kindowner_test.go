package aggregators_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// kindFiles own the aggregate kinds: their params, window state and
// release (doc.go's layout). kind.go declares the interface and kindOf.
var kindFiles = []string{"kind.go", "hist.go", "km.go", "cumulative.go", "weibull.go", "weibull_inference.go",
	"discrete.go", "discrete_window.go", "discrete_inference.go"}

// kindNames are the kinds' types and their window state.
var kindNames = []string{"histKind", "histWindow", "histCache", "histOf", "newHist", "kmKind", "cumulativeKind",
	"weibullKind", "discreteKind", "discreteWindow", "otherKind"}

// The engine, the aggregate, the release and the checkpoint know only the
// kind interface: no production file outside the kinds' own names a kind
// or its window state (issue 23: the engine asked for *cumulativeKind and
// the aggregate counted histograms itself before).
func TestOnlyKindFilesNameKinds(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || slices.Contains(kindFiles, name) {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && slices.Contains(kindNames, id.Name) {
				t.Errorf("%s: names %s: kind logic belongs in the kind's file", fset.Position(id.Pos()), id.Name)
			}
			return true
		})
	}
	for _, name := range kindFiles {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("kind file %s: %v (update kindFiles)", name, err)
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d files: the walk is broken", checked)
	}
}
