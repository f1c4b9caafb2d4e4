package helmtest

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test, relative to this package.
const chartDir = "../../deploy/helm/dpsurv"

const (
	releaseName = "dpsurv"
	namespace   = "dpsurv"
)

// kubeVersion is the cluster version the chart is rendered for. The Helm
// library defaults to v1.20 unless the CLI was built with ldflags; pin a
// current one so deprecation checks are meaningful.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}

// object is one rendered Kubernetes object.
type object = map[string]any

// rendered is the output of one `helm template`.
type rendered struct {
	objects []object
	notes   string
}

func (r rendered) byKind(kind string) []object {
	var out []object
	for _, o := range r.objects {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of kind, failing the test otherwise.
func (r rendered) one(t *testing.T, kind string) object {
	t.Helper()
	objs := r.byKind(kind)
	if len(objs) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(objs))
	}
	return objs[0]
}

// values builds chart values the way the helm CLI does: the values file (if
// any), then each --set expression in order.
func values(t *testing.T, file string, sets ...string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if file != "" {
		v, err := chartutil.ReadValuesFile(file)
		if err != nil {
			t.Fatalf("read values %s: %v", file, err)
		}
		vals = v
	}
	for _, s := range sets {
		// --set keeps decimals as strings ("0.5"); numbers other than
		// integers need --set-json, written here as "json:path=value".
		if j, ok := strings.CutPrefix(s, "json:"); ok {
			if err := strvals.ParseJSON(j, vals); err != nil {
				t.Fatalf("parse --set-json %q: %v", j, err)
			}
			continue
		}
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatalf("parse --set %q: %v", s, err)
		}
	}
	return vals
}

// clone deep-copies decoded values; helm's lint mutates the map it is given
// (it drops keys set to null), so each consumer gets its own copy.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = clone(c)
		}
		return out
	case chartutil.Values:
		return clone(map[string]any(x))
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = clone(c)
		}
		return out
	}
	return v
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

// render runs the equivalent of `helm template` (client-only dry-run install,
// with schema validation).
func render(t *testing.T, vals map[string]any) (rendered, error) {
	t.Helper()
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = releaseName
	inst.Namespace = namespace
	inst.KubeVersion = kubeVersion
	rel, err := inst.Run(loadChart(t), clone(vals).(map[string]any))
	if err != nil {
		return rendered{}, err
	}
	objs, err := splitManifest(rel.Manifest)
	if err != nil {
		return rendered{}, fmt.Errorf("parse rendered manifest: %w", err)
	}
	return rendered{objects: objs, notes: rel.Info.Notes}, nil
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

// splitManifest parses a multi-document YAML stream into objects, skipping
// empty documents.
func splitManifest(manifest string) ([]object, error) {
	var out []object
	for i, doc := range strings.Split(manifest, "\n---") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var o object
		if err := yaml.UnmarshalStrict([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, o)
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// lintChart runs `helm lint --strict` with vals and returns every message of
// warning severity or worse.
func lintChart(vals map[string]any) []support.Message {
	l := lint.AllWithKubeVersion(chartDir, clone(vals).(map[string]any), namespace, kubeVersion)
	var bad []support.Message
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			bad = append(bad, m)
		}
	}
	return bad
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

// get walks a path of map keys and list indices through decoded YAML.
func get(v any, path ...any) (any, bool) {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false
			}
			v = l[k]
		default:
			return nil, false
		}
	}
	return v, true
}

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
	cm := r.one(t, "ConfigMap")
	text, ok := mustGet(t, cm, "data", "config.yaml").(string)
	if !ok {
		t.Fatalf("ConfigMap data.config.yaml is not a string")
	}
	var cfg map[string]any
	if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
		t.Fatalf("parse rendered config.yaml: %v", err)
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

// TestMain silences the Helm engine's lint-mode notices, which go to the
// standard logger (e.g. "[INFO] Fail: ..." for a fail() that lint tolerates).
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}
