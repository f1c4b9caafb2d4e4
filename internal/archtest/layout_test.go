package archtest

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/gofiles"
)

// The README's layout table names every package directory of the tree, and
// every path it names exists: the table is how a newcomer finds code.
func TestLayoutTableMatchesTree(t *testing.T) {
	root := gofiles.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := layoutPaths(t, string(readme))
	for _, p := range listed {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("README layout names %q, which does not exist", p)
		}
	}
	covered := func(dir string) bool {
		for _, p := range listed {
			if dir == p || strings.HasPrefix(dir, p+"/") {
				return true
			}
		}
		return false
	}
	dirs := map[string]bool{}
	for _, rel := range gofiles.Production(t) {
		if dir := path.Dir(rel); dir != "." { // the root holds only tools.go (tool dependencies)
			dirs[dir] = true
		}
	}
	for dir := range dirs {
		if !covered(dir) {
			t.Errorf("package directory %s is not in the README's layout table", dir)
		}
	}
}

// layoutPaths returns the backticked paths in the first column of the
// README's "## Layout" table.
func layoutPaths(t *testing.T, readme string) []string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	tick := regexp.MustCompile("`([^`]+)`")
	var paths []string
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			paths = append(paths, strings.TrimSuffix(m[1], "/"))
		}
	}
	if len(paths) < 10 {
		t.Fatalf("README layout table lists %d paths", len(paths))
	}
	return paths
}
