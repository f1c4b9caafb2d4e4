package sbom_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/dpsurv/dpsurv"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-sbom/sbom"
	"github.com/dpsurv/dpsurv/internal/gofiles"
)

// The SBOM that `make sbom` writes (cmd/dpsurv-sbom) lists every module
// that go.mod requires, at the version go.mod requires, with its go.sum
// hash; the required stack is marked as linked into the binary; the main
// module carries the VERSION file's version and the Apache-2.0 license.
func TestSBOMListsGoModModules(t *testing.T) {
	root := gofiles.Root(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go toolchain not on PATH: %v", err)
	}
	out := filepath.Join(t.TempDir(), "bom.json")
	cmd := exec.Command(goCmd, "run", "./cmd/dpsurv-sbom", "-version", dpsurv.Version(), "-o", out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dpsurv-sbom: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var bom sbom.BOM
	if err := json.Unmarshal(raw, &bom); err != nil {
		t.Fatalf("SBOM is not JSON: %v", err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" || bom.Version != 1 {
		t.Errorf("header = %q %q %d, want CycloneDX 1.5 version 1", bom.BOMFormat, bom.SpecVersion, bom.Version)
	}
	if bom.Metadata.Timestamp != "2023-11-14T22:13:20Z" {
		t.Errorf("timestamp %q does not follow SOURCE_DATE_EPOCH", bom.Metadata.Timestamp)
	}
	app := bom.Metadata.Component
	if app.Name != "github.com/dpsurv/dpsurv" || app.Version != "v"+dpsurv.Version() ||
		len(app.Licenses) != 1 || app.Licenses[0].License.ID != "Apache-2.0" {
		t.Errorf("main component = %+v, want github.com/dpsurv/dpsurv v%s Apache-2.0", app, dpsurv.Version())
	}

	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]sbom.Component{}
	for _, c := range bom.Components {
		if _, dup := byPath[c.Name]; dup {
			t.Errorf("component %s listed twice", c.Name)
		}
		byPath[c.Name] = c
		if c.PURL != sbom.PURL(c.Name, c.Version) || c.BOMRef != c.PURL {
			t.Errorf("%s: purl %q bom-ref %q", c.Name, c.PURL, c.BOMRef)
		}
		if c.Scope != "required" && c.Scope != "optional" {
			t.Errorf("%s: scope %q", c.Name, c.Scope)
		}
	}
	if len(mf.Require) < 10 {
		t.Fatalf("go.mod parsed to %d requirements", len(mf.Require))
	}
	for _, r := range mf.Require {
		c, ok := byPath[r.Mod.Path]
		if !ok {
			t.Errorf("go.mod requires %s, missing from the SBOM", r.Mod.Path)
			continue
		}
		if c.Version != r.Mod.Version {
			t.Errorf("%s: SBOM version %s, go.mod %s", r.Mod.Path, c.Version, r.Mod.Version)
		}
	}
	// The required stack is compiled into the binary.
	for _, p := range []string{"github.com/segmentio/kafka-go", "github.com/apache/arrow/go/v15", "gonum.org/v1/gonum", "go.uber.org/zap"} {
		if byPath[p].Scope != "required" {
			t.Errorf("%s: scope %q, want required (linked into cmd/dpsurv)", p, byPath[p].Scope)
		}
	}
	// Every component's hash is the go.sum line of its version.
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"github.com/segmentio/kafka-go", "go.uber.org/zap"} {
		c := byPath[p]
		var sum string
		for _, pr := range c.Properties {
			if pr.Name == "dpsurv:go:sum" {
				sum = pr.Value
			}
		}
		if sum == "" || !containsLine(string(gosum), p+" "+c.Version+" "+sum) {
			t.Errorf("%s: hash %q is not go.sum's", p, sum)
		}
	}
	if len(bom.Dependencies) != 1 || bom.Dependencies[0].Ref != app.BOMRef || len(bom.Dependencies[0].DependsOn) == 0 {
		t.Errorf("dependencies = %+v", bom.Dependencies)
	}
}

func containsLine(text, line string) bool {
	for len(text) > 0 {
		i := 0
		for i < len(text) && text[i] != '\n' {
			i++
		}
		if text[:i] == line {
			return true
		}
		if i == len(text) {
			break
		}
		text = text[i+1:]
	}
	return false
}

// Build refuses a module list without the main module, and a replaced
// module is listed under its replacement.
func TestBuildReplaceAndNoMain(t *testing.T) {
	if _, err := sbom.Build([]sbom.Module{{Path: "a", Version: "v1.0.0"}}, nil, sbom.Options{}); err == nil {
		t.Error("no main module: want an error")
	}
	mods := []sbom.Module{{Path: "m", Main: true}, {Path: "a", Version: "v1.0.0", Replace: &sbom.Module{Path: "b", Version: "v2.0.0", Sum: "h1:x"}}}
	bom, err := sbom.Build(mods, map[string]bool{"a": true}, sbom.Options{Version: "1.2.3", Time: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	c := bom.Components[0]
	if c.Name != "b" || c.Version != "v2.0.0" || c.Scope != "required" || c.Properties[0].Value != "h1:x" || c.Properties[1].Value != "a@v1.0.0" {
		t.Errorf("replaced component = %+v", c)
	}
	if bom.Metadata.Component.Version != "v1.2.3" {
		t.Errorf("main version %q", bom.Metadata.Component.Version)
	}
}
