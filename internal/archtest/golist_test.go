package archtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

// listedPackage is one package of the module as go list reports it: its
// production imports (Imports) and every package its production code
// depends on, directly or not (Deps), standard library and other modules
// included.
type listedPackage struct {
	Imports, Deps []string
}

var (
	listOnce sync.Once
	listed   map[string]listedPackage // by full import path
	listErr  string
)

// modulePackages runs go list over the whole module once for every test
// of the binary (one go list in place of one per check: it loads the tree
// each time) and returns its packages by import path. It fails the test
// when go list fails or finds fewer than 40 packages: a check over part
// of the tree would pass vacuously.
func modulePackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	listOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			listErr = "go tool not found: " + err.Error()
			return
		}
		cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
		cmd.Dir = filepath.Dir(datasets.Dir(t))
		out, err := cmd.Output()
		if err != nil {
			listErr = "go list ./...: " + err.Error()
			if ee, ok := err.(*exec.ExitError); ok {
				listErr += "\n" + string(ee.Stderr)
			}
			return
		}
		listed = map[string]listedPackage{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Split(line, "|")
			if len(f) != 3 {
				listErr = "go list ./...: unexpected line " + line
				return
			}
			listed[f[0]] = listedPackage{Imports: strings.Fields(f[1]), Deps: strings.Fields(f[2])}
		}
	})
	if listErr != "" {
		t.Fatal(listErr)
	}
	if len(listed) < 40 {
		t.Fatalf("go list found %d packages of the module; want the whole tree", len(listed))
	}
	return listed
}
