package helmtest

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/dpsurv/dpsurv/tools/helm/internal/chartrender"
)

// chartDir is the chart under test, relative to this package.
const chartDir = "../../deploy/helm/dpsurv"

const (
	releaseName = "dpsurv"
	namespace   = "dpsurv"
)

// TestMain silences the Helm engine's lint-mode notices, which go to the
// standard logger (e.g. "[INFO] Fail: ..." for a fail() that lint tolerates).
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

type object = chartrender.Object

// rendered wraps a render with test helpers.
type rendered struct{ chartrender.Rendered }

func (r rendered) byKind(kind string) []object { return r.ByKind(kind) }

// one returns the single object of kind, failing the test otherwise.
func (r rendered) one(t *testing.T, kind string) object {
	t.Helper()
	objs := r.ByKind(kind)
	if len(objs) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(objs))
	}
	return objs[0]
}

// values builds chart values like the helm CLI: a values file, then --set
// expressions ("json:" prefix for --set-json).
func values(t *testing.T, file string, sets ...string) map[string]any {
	t.Helper()
	v, err := chartrender.Values(file, sets...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func render(t *testing.T, vals map[string]any) (rendered, error) {
	t.Helper()
	r, err := chartrender.Render(chartDir, releaseName, namespace, vals)
	return rendered{r}, err
}

// mustRender renders and fails the test on error.
func mustRender(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	r, err := render(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

func effective(t *testing.T, vals map[string]any) map[string]any {
	t.Helper()
	eff, err := chartrender.Effective(chartDir, vals)
	if err != nil {
		t.Fatal(err)
	}
	return eff
}

func lintChart(vals map[string]any) []support.Message {
	return chartrender.Lint(chartDir, namespace, vals)
}

// examples lists the chart's example values files.
func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if err != nil {
		t.Fatalf("glob examples: %v", err)
	}
	sort.Strings(files)
	return files
}

func get(v any, path ...any) (any, bool) { return chartrender.Get(v, path...) }

// mustGet is get that fails the test when the path is missing.
func mustGet(t *testing.T, v any, path ...any) any {
	t.Helper()
	out, ok := get(v, path...)
	if !ok {
		t.Fatalf("missing %v", path)
	}
	return out
}

// configOf decodes the service config file out of the rendered ConfigMap.
func configOf(t *testing.T, r rendered) (map[string]any, string) {
	t.Helper()
	cfg, text, err := r.ServiceConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	return cfg, text
}

// container returns the dpsurv container of the Deployment.
func container(t *testing.T, r rendered) map[string]any {
	t.Helper()
	dep := r.one(t, "Deployment")
	c, ok := mustGet(t, dep, "spec", "template", "spec", "containers", 0).(map[string]any)
	if !ok || c["name"] != "dpsurv" {
		t.Fatalf("first container is not dpsurv: %v", c)
	}
	return c
}
