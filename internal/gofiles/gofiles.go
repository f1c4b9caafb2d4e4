// Package gofiles lists the module's production Go files for the tests
// that check every one of them: the file-size limit and the README's
// layout table (internal/archtest), the float-noise linter
// (internal/privacy). One walk, so the checks agree on what the tree is.
// It also finds the module's root and reads the Makefile's variables
// (MakeVar) for the tests that hold the tree to the Makefile.
// Test support only: no production code imports it.
package gofiles

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

// minFiles is the fewest production files a whole-tree walk finds: fewer
// means a wrong root, and a check over part of the tree passes vacuously.
const minFiles = 200

// Root returns the module's root directory (the one holding go.mod and
// data/).
func Root(t testing.TB) string {
	t.Helper()
	return filepath.Dir(datasets.Dir(t))
}

// Production returns the module's production Go files (every .go file but
// the _test.go ones) as slash-separated paths relative to Root, in lexical
// order. It skips hidden directories, testdata, vendor and node_modules,
// and fails the test when it finds fewer than 200 files.
func Production(t testing.TB) []string {
	t.Helper()
	root := Root(t)
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if len(files) < minFiles {
		t.Fatalf("found %d production Go files under %s; want the whole tree (at least %d)", len(files), root, minFiles)
	}
	return files
}
