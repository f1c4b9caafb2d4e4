package buildinfo_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dpsurv/dpsurv"
	"github.com/dpsurv/dpsurv/buildinfo"
	"github.com/dpsurv/dpsurv/internal/gofiles"
)

// semver is the Semantic Versioning 2.0.0 grammar (semver.org's regex).
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// The release artefacts exist and agree: VERSION is a semantic version, the
// CHANGELOG has its section, a git tag on this commit is "v"+VERSION, and
// LICENSE is the Apache License 2.0.
func TestReleaseArtefacts(t *testing.T) {
	r := gofiles.Root(t)
	v := dpsurv.Version()
	if !semver.MatchString(v) {
		t.Fatalf("VERSION %q is not a semantic version", v)
	}
	cl, err := os.ReadFile(filepath.Join(r, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cl), "\n## ["+v+"]") {
		t.Errorf("CHANGELOG.md has no \"## [%s]\" section", v)
	}
	lic, err := os.ReadFile(filepath.Join(r, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lic), "Apache License\n                           Version 2.0, January 2004") ||
		!strings.Contains(string(lic), "END OF TERMS AND CONDITIONS") {
		t.Error("LICENSE is not the Apache License 2.0 text")
	}
	for _, f := range []string{"SECURITY.md", "data/README.md"} {
		if _, err := os.Stat(filepath.Join(r, f)); err != nil {
			t.Error(err)
		}
	}
	// A version tag on HEAD must name VERSION (clones without .git or tags,
	// as in CI's copy, have nothing to compare).
	out, err := exec.Command("git", "-C", r, "tag", "--points-at", "HEAD").Output()
	if err != nil {
		t.Logf("no git tags to compare (%v)", err)
		return
	}
	for _, tag := range strings.Fields(string(out)) {
		if strings.HasPrefix(tag, "v") && semver.MatchString(tag[1:]) && tag != "v"+v {
			t.Errorf("HEAD is tagged %s but VERSION says %s", tag, v)
		}
	}
}

// A binary built with the Makefile's -ldflags reports VERSION and the
// stamped revision, in `dpsurv version --json` and `dpsurv --version`.
func TestBinaryReportsVersion(t *testing.T) {
	r := gofiles.Root(t)
	const rev = "0123456789abcdef0123456789abcdef01234567"
	ldflags := strings.NewReplacer("$(VERSION)", dpsurv.Version(), "$(REVISION)", rev).Replace(gofiles.MakeVar(t, "LDFLAGS"))
	// The Dockerfile stamps the same symbols from its build args.
	df, err := os.ReadFile(filepath.Join(r, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range []string{"buildinfo.version=${VERSION}", "buildinfo.revision=${REVISION}"} {
		if !strings.Contains(string(df), "github.com/dpsurv/dpsurv/"+sym) {
			t.Errorf("Dockerfile does not stamp %s", sym)
		}
	}
	bin := filepath.Join(t.TempDir(), "dpsurv")
	// No -trimpath and no CGO_ENABLED=0 (the Makefile's other build
	// settings): the stamps are link-time only, so the test reuses the
	// build cache of the packages that the other tests' builds of dpsurv
	// fill (CGO_ENABLED=0 alone recompiled every package that imports net)
	// and links once. `go run -exec cp` instead of `go build -o`: the go
	// command caches the executables of go run (Go 1.24 on), so a run on an
	// unchanged tree copies the binary linked before instead of linking it
	// again (about 1.5 CPU-s), as internal/doccmd builds its binaries.
	build := exec.Command("go", "run", "-ldflags", ldflags, "-exec", "cp", "./cmd/dpsurv", bin)
	build.Dir = r
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go run -exec cp: %v\n%s", err, b)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var in buildinfo.Info
	if err := json.Unmarshal(out, &in); err != nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	if in.Version != dpsurv.Version() || in.Revision != rev || !strings.HasPrefix(in.GoVersion, "go") {
		t.Errorf("version --json = %+v, want version %s revision %s", in, dpsurv.Version(), rev)
	}
	line, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(line), "dpsurv "+dpsurv.Version()+" (revision "+rev+", go") {
		t.Errorf("--version = %q", line)
	}
}

// dpsurv_build_info is 1 with the build's labels.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := buildinfo.Register(reg); err != nil {
		t.Fatal(err)
	}
	in := buildinfo.Get()
	want := `# HELP dpsurv_build_info Always 1; the labels say which build is running (version from VERSION, source revision, Go toolchain).
# TYPE dpsurv_build_info gauge
dpsurv_build_info{goversion="` + in.GoVersion + `",revision="` + in.Revision + `",version="` + in.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "dpsurv_build_info"); err != nil {
		t.Error(err)
	}
}
