// Package monitor reads the monitoring objects the dpsurv chart renders —
// the Grafana dashboard ConfigMap and the PrometheusRule — and checks them:
// the dashboard's structure (every query panel on the datasource variable,
// no hard-coded cluster, namespace or host), and the PromQL text helpers the
// tests use to evaluate alert expressions against a live Prometheus.
package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/dpsurv/dpsurv/tools/helm/internal/chartrender"
)

// DatasourceVar is the dashboard's datasource variable reference.
const DatasourceVar = "${datasource}"

// Dashboard is the part of a Grafana dashboard the checks read.
type Dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Panels []Panel `json:"panels"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *Datasource     `json:"datasource"`
}

// Datasource is a panel's or target's datasource reference.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is a dashboard panel (rows nest panels).
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	Targets    []Target    `json:"targets"`
	Panels     []Panel     `json:"panels"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// ParseDashboard decodes a dashboard JSON document.
func ParseDashboard(text string) (Dashboard, error) {
	var d Dashboard
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("parse dashboard: %w", err)
	}
	if dec.More() {
		return d, errors.New("parse dashboard: trailing data after the JSON object")
	}
	return d, nil
}

// AllPanels returns every panel, rows' nested panels included.
func (d Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// PanelQuery is one target of one panel.
type PanelQuery struct {
	Panel string
	RefID string
	Expr  string
}

// Queries returns every panel target's PromQL.
func (d Dashboard) Queries() []PanelQuery {
	var out []PanelQuery
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			out = append(out, PanelQuery{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
		}
	}
	return out
}

// clusterish matches text that would tie the dashboard to one cluster,
// namespace or host: a cluster label, in-cluster DNS names, IP addresses.
var clusterish = regexp.MustCompile(`(?i)\bcluster\b|\.svc\b|\.cluster\.local|\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)

// matcher is one PromQL label matcher: label, operator, quoted value.
var matcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)

// deploymentLabels are the target labels that differ between deployments;
// a query may match them only through a dashboard variable.
var deploymentLabels = map[string]bool{"namespace": true, "job": true, "instance": true, "pod": true, "service": true, "cluster": true, "container": true, "endpoint": true}

// Validate checks a dashboard: a datasource variable of type datasource
// (Prometheus); every panel with targets on that variable, and every
// target too; no panel without a title; every query non-empty; the
// deployment labels (namespace, job, instance, pod, ...) matched only
// through variables; nothing that names a cluster, an in-cluster host or
// an IP address; every variable referenced defined.
func (d Dashboard) Validate() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	vars := map[string]bool{}
	hasDS := false
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Name == "datasource" {
			hasDS = v.Type == "datasource" && string(v.Query) == `"prometheus"`
		}
		if v.Type == "query" {
			if v.Datasource == nil || v.Datasource.UID != DatasourceVar {
				bad("variable %q does not query the datasource variable", v.Name)
			}
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				_ = json.Unmarshal(v.Query, &q.Query)
			}
			for _, m := range matcher.FindAllStringSubmatch(q.Query, -1) {
				if deploymentLabels[m[1]] && !strings.HasPrefix(m[3], "$") {
					bad("variable %q: %s%s%q is hard-coded; use a variable", v.Name, m[1], m[2], m[3])
				}
			}
		}
	}
	if !hasDS {
		bad("no datasource variable named \"datasource\" of type datasource querying prometheus")
	}
	if d.UID == "" || d.Title == "" {
		bad("dashboard without uid or title")
	}
	queries := 0
	for _, p := range d.AllPanels() {
		if p.Type == "row" {
			if len(p.Targets) > 0 {
				bad("row %q has targets", p.Title)
			}
			continue
		}
		if p.Title == "" {
			bad("panel %d has no title", p.ID)
		}
		if len(p.Targets) == 0 {
			bad("panel %q has no query", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != DatasourceVar || p.Datasource.Type != "prometheus" {
			bad("panel %q: datasource %+v, want the %s variable", p.Title, p.Datasource, DatasourceVar)
		}
		for _, t := range p.Targets {
			queries++
			if t.Datasource == nil || t.Datasource.UID != DatasourceVar {
				bad("panel %q target %s: datasource %+v, want %s", p.Title, t.RefID, t.Datasource, DatasourceVar)
			}
			if strings.TrimSpace(t.Expr) == "" {
				bad("panel %q target %s: empty expr", p.Title, t.RefID)
			}
			for _, m := range matcher.FindAllStringSubmatch(t.Expr, -1) {
				if deploymentLabels[m[1]] && !strings.HasPrefix(m[3], "$") {
					bad("panel %q target %s: %s%s%q is hard-coded; use a variable", p.Title, t.RefID, m[1], m[2], m[3])
				}
			}
			for _, v := range regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)`).FindAllStringSubmatch(t.Expr, -1) {
				if !vars[v[1]] && !strings.HasPrefix(v[1], "__") {
					bad("panel %q target %s: undefined variable $%s", p.Title, t.RefID, v[1])
				}
			}
		}
	}
	if queries == 0 {
		bad("dashboard has no queries")
	}
	return errs
}

// HardCoded returns every place in the raw dashboard JSON that names a
// cluster, an in-cluster host or an IP address.
func HardCoded(text string) []string {
	return clusterish.FindAllString(text, -1)
}

// DashboardsIn returns the dashboards of the rendered ConfigMaps that carry
// the sidecar label (label=value), by ConfigMap name and data key.
func DashboardsIn(r chartrender.Rendered, label, value string) (map[string]string, error) {
	out := map[string]string{}
	for _, cm := range r.ByKind("ConfigMap") {
		if v, _ := chartrender.Get(cm, "metadata", "labels", label); v != value {
			continue
		}
		data, _ := chartrender.Get(cm, "data")
		m, ok := data.(map[string]any)
		if !ok || len(m) == 0 {
			return nil, fmt.Errorf("dashboard ConfigMap without data")
		}
		name, _ := chartrender.Get(cm, "metadata", "name")
		for k, v := range m {
			s, isStr := v.(string)
			if !isStr || !strings.HasSuffix(k, ".json") {
				return nil, fmt.Errorf("dashboard ConfigMap %v: key %q is not a .json string", name, k)
			}
			out[fmt.Sprintf("%v/%s", name, k)] = s
		}
	}
	return out, nil
}

// Rule is one alerting rule of the rendered PrometheusRule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RuleGroup is one rule group.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// RulesIn returns the rule groups of the one rendered PrometheusRule.
func RulesIn(r chartrender.Rendered) ([]RuleGroup, error) {
	prs := r.ByKind("PrometheusRule")
	if len(prs) != 1 {
		return nil, fmt.Errorf("want one PrometheusRule, got %d", len(prs))
	}
	groups, ok := chartrender.Get(prs[0], "spec", "groups")
	if !ok {
		return nil, errors.New("PrometheusRule has no spec.groups")
	}
	b, err := json.Marshal(groups)
	if err != nil {
		return nil, err
	}
	var out []RuleGroup
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("decode rule groups: %w", err)
	}
	return out, nil
}

// RulesFile is the rule groups as a Prometheus rules file (what promtool
// and a plain Prometheus load).
func RulesFile(groups []RuleGroup) ([]byte, error) {
	return yaml.Marshal(map[string]any{"groups": groups})
}

// Alerts returns every rule of groups, in order.
func Alerts(groups []RuleGroup) []Rule {
	var out []Rule
	for _, g := range groups {
		out = append(out, g.Rules...)
	}
	return out
}

// WithBool rewrites every comparison operator of a PromQL expression
// (outside label matchers and strings) to its bool form: "a > 0.8" becomes
// "a > bool 0.8", which returns a 0/1 sample for every series of a instead
// of filtering them. An alert expression rewritten so returns a series
// whenever the series it compares exist, firing or not.
func WithBool(expr string) string {
	var b strings.Builder
	depth := 0 // inside {...}
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if quote != 0 {
			b.WriteByte(c)
			if c == '\\' && i+1 < len(expr) {
				i++
				b.WriteByte(expr[i])
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch {
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			depth--
		case depth == 0 && (c == '>' || c == '<' || c == '=' || c == '!'):
			op := string(c)
			if i+1 < len(expr) && expr[i+1] == '=' {
				op += "="
			}
			if op == "=" || op == "!" { // not a comparison (cannot occur outside braces in valid PromQL)
				break
			}
			b.WriteString(op)
			i += len(op) - 1
			rest := strings.TrimLeft(expr[i+1:], " ")
			if !strings.HasPrefix(rest, "bool") {
				b.WriteString(" bool")
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// metricName matches a dpsurv metric name (or the scrape's up) in PromQL.
var metricName = regexp.MustCompile(`\b(dpsurv_[a-z0-9_]+|up)\b\s*[{\[]`)

// MetricNames returns the metric names an expression selects, sorted.
func MetricNames(expr string) []string {
	seen := map[string]bool{}
	for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
		seen[m[1]] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
