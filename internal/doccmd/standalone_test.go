package doccmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	code := regexp.MustCompile(`\.\./shared|/work/shared`)
	docs := regexp.MustCompile(`shared/data|\.\./shared`)
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
		var re *regexp.Regexp
		switch {
		case ext == ".go" || ext == ".sh" || ext == ".R" || ext == ".mjs" || ext == ".yaml" || ext == ".yml" ||
			d.Name() == "Makefile" || d.Name() == "Dockerfile":
			re = code
		case ext == ".md":
			re = docs
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) {
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
