package doccmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryStandsAlone fails when a source, build or script file
// refers to the shared folder beside our own checkouts (a sibling named
// shared), which a
// user's clone does not have: tests and documented commands must read only
// the repository (data/ holds the datasets). Documents may not point at its
// data either.
func TestRepositoryStandsAlone(t *testing.T) {
	root := repoRoot(t)
	// Literal strings, not a regular expression: the walk reads every
	// source file, and a regexp over them all took seconds under -race.
	// Built from parts so that this guard itself does not spell the paths
	// a search for reads of the sibling folder would find.
	const sib = "shared"
	code := []string{"../" + sib, "/work/" + sib}
	docs := []string{sib + "/data", "../" + sib}
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		// .ci/run names the folder to prove it is absent.
		if rel == filepath.Join("internal", "doccmd", "standalone_test.go") || rel == filepath.Join(".ci", "run") {
			return nil
		}
		ext := filepath.Ext(p)
		var needles []string
		switch {
		case ext == ".go" || ext == ".sh" || ext == ".R" || ext == ".mjs" || ext == ".yaml" || ext == ".yml" ||
			d.Name() == "Makefile" || d.Name() == "Dockerfile":
			needles = code
		case ext == ".md":
			needles = docs
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		has := func(s string) bool {
			return slices.ContainsFunc(needles, func(n string) bool { return strings.Contains(s, n) })
		}
		if !has(string(b)) { // most files: no line split
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if has(line) {
				bad = append(bad, rel+":"+itoa(i+1)+": "+strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("refers to the shared folder beside the clone: %s", b)
	}
}
