// Package chartrender renders a Helm chart the way `helm template` does, with
// the Helm v3 SDK and no cluster, and lints it the way `helm lint` does. It
// is shared by the chart tests and the Dockerfile check of this module.
package chartrender

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the cluster version charts are rendered and linted for. The
// Helm library defaults to v1.20 unless the CLI was built with ldflags; pin a
// current one so API deprecation checks are meaningful.
var KubeVersion = &chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}

// Object is one rendered Kubernetes object, decoded from YAML.
type Object = map[string]any

// Rendered is the output of one render.
type Rendered struct {
	Objects []Object
	Notes   string
}

// ByKind returns the rendered objects of one kind, in manifest order.
func (r Rendered) ByKind(kind string) []Object {
	var out []Object
	for _, o := range r.Objects {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

// Values builds chart values the way the helm CLI does: the values file (""
// for none), then each --set expression in order. An expression written
// "json:path=value" is a --set-json (plain --set keeps decimals such as 0.5
// as strings, which the chart's schema rejects).
func Values(file string, sets ...string) (map[string]any, error) {
	vals := map[string]any{}
	if file != "" {
		v, err := chartutil.ReadValuesFile(file)
		if err != nil {
			return nil, fmt.Errorf("read values %s: %w", file, err)
		}
		vals = v
	}
	for _, s := range sets {
		if j, ok := strings.CutPrefix(s, "json:"); ok {
			if err := strvals.ParseJSON(j, vals); err != nil {
				return nil, fmt.Errorf("parse --set-json %q: %w", j, err)
			}
			continue
		}
		if err := strvals.ParseInto(s, vals); err != nil {
			return nil, fmt.Errorf("parse --set %q: %w", s, err)
		}
	}
	return vals, nil
}

// Render runs the equivalent of `helm template NAME DIR -n NAMESPACE` with
// vals, schema validation included.
func Render(dir, name, namespace string, vals map[string]any) (Rendered, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return Rendered{}, fmt.Errorf("load chart %s: %w", dir, err)
	}
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = name
	inst.Namespace = namespace
	inst.KubeVersion = KubeVersion
	rel, err := inst.Run(ch, Clone(vals))
	if err != nil {
		return Rendered{}, err
	}
	objs, err := SplitManifest(rel.Manifest)
	if err != nil {
		return Rendered{}, fmt.Errorf("parse rendered manifest: %w", err)
	}
	return Rendered{Objects: objs, Notes: rel.Info.Notes}, nil
}

// Effective returns the chart's defaults coalesced with vals, as the
// templates see .Values.
func Effective(dir string, vals map[string]any) (map[string]any, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	eff, err := chartutil.CoalesceValues(ch, Clone(vals))
	if err != nil {
		return nil, fmt.Errorf("coalesce values: %w", err)
	}
	return eff, nil
}

// Lint runs `helm lint --strict` on dir with vals and returns every message
// of warning severity or worse.
func Lint(dir, namespace string, vals map[string]any) []support.Message {
	l := lint.AllWithKubeVersion(dir, Clone(vals), namespace, KubeVersion)
	var bad []support.Message
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			bad = append(bad, m)
		}
	}
	return bad
}

// SplitManifest parses a multi-document YAML stream into objects, skipping
// documents that hold only comments.
func SplitManifest(manifest string) ([]Object, error) {
	var out []Object
	for i, doc := range strings.Split(manifest, "\n---") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var o Object
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

// Clone deep-copies decoded values. Helm's lint mutates the map it is given
// (it drops keys set to null), so every consumer gets its own copy.
func Clone(vals map[string]any) map[string]any {
	c, _ := clone(vals).(map[string]any)
	return c
}

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

// Get walks a path of map keys (string) and list indices (int) through
// decoded YAML.
func Get(v any, path ...any) (any, bool) {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				if vals, isVals := v.(chartutil.Values); isVals {
					m, ok = map[string]any(vals), true
				}
			}
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

// ServiceConfig extracts the dpsurv config file (data["config.yaml"]) from
// the one rendered ConfigMap that holds it (the dashboard ConfigMap, when
// enabled, holds none).
func (r Rendered) ServiceConfig() (string, error) {
	var found []string
	for _, cm := range r.ByKind("ConfigMap") {
		if v, ok := Get(cm, "data", "config.yaml"); ok {
			s, isStr := v.(string)
			if !isStr {
				return "", fmt.Errorf("ConfigMap data.config.yaml is not a string")
			}
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("want one ConfigMap with data.config.yaml, got %d", len(found))
	}
	return found[0], nil
}

// ServiceConfigMap is ServiceConfig decoded strictly (a duplicate key
// fails), with its text.
func (r Rendered) ServiceConfigMap() (map[string]any, string, error) {
	text, err := r.ServiceConfig()
	if err != nil {
		return nil, "", err
	}
	var cfg map[string]any
	if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
		return nil, "", fmt.Errorf("parse rendered config.yaml: %w", err)
	}
	return cfg, text, nil
}
