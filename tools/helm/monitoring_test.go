package helmtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dpsurv/dpsurv/tools/helm/internal/monitor"
)

// wantAlerts are the alerts the runbook (docs/operations.md) documents, one
// section each; the last aggregatorAlerts only with aggregators.
var wantAlerts = []string{"DpsurvNotReady", "DpsurvConsumerLagGrowing", "DpsurvDeadLetterRateHigh",
	"DpsurvWindowWithheld", "DpsurvPrivacyBudgetHigh", "DpsurvStalledPartitions",
	"DpsurvNoLeaseHolder", "DpsurvTwoLeaseHolders", "DpsurvPendingWindowsHigh"}

// aggregatorAlerts is the number of wantAlerts' last alerts rendered only
// with config.aggregators.
const aggregatorAlerts = 3

// checkMonitoring asserts the opt-in monitoring objects: each present only
// when enabled; the dashboard valid and labelled for the sidecar; the
// PrometheusRule's alerts; the NetworkPolicy's ingress and egress; and an
// HTTP listen address Prometheus can reach.
func checkMonitoring(t *testing.T, r rendered, eff map[string]any) {
	t.Helper()
	on := func(key string) bool { v, _ := get(eff, key, "enabled"); return v == true }

	cfg, _ := configOf(t, r)
	listen := fmt.Sprint(mustGet(t, cfg, "http", "listen"))
	if host := listen[:strings.LastIndex(listen, ":")]; host != "" && host != "0.0.0.0" {
		t.Errorf("config.http.listen %q: want every interface of the pod (\":port\")", listen)
	}

	dash, err := monitor.DashboardsIn(r.Rendered, "grafana_dashboard", "1")
	if err != nil {
		t.Fatal(err)
	}
	if on("dashboard") {
		if len(dash) != 1 {
			t.Fatalf("dashboard.enabled: want one dashboard ConfigMap with the sidecar label, got %d", len(dash))
		}
		for name, text := range dash {
			checkDashboard(t, name, text)
		}
	} else if len(dash) != 0 {
		t.Errorf("dashboard rendered although dashboard.enabled is false")
	}

	prs := r.byKind("PrometheusRule")
	if on("prometheusRule") {
		groups, err := monitor.RulesIn(r.Rendered)
		if err != nil {
			t.Fatal(err)
		}
		want := wantAlerts
		if aggs, _ := get(eff, "config", "aggregators"); len(aggs.([]any)) == 0 {
			want = want[:len(want)-aggregatorAlerts]
		}
		var got []string
		for _, a := range monitor.Alerts(groups) {
			got = append(got, a.Alert)
			if a.Labels["severity"] == "" || a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
				t.Errorf("alert %s lacks severity, summary or description", a.Alert)
			}
			// runbook_url, absolute (Alertmanager and Grafana link it as is).
			if rb := a.Annotations["runbook_url"]; !strings.HasSuffix(rb, "#"+strings.ToLower(a.Alert)) ||
				!strings.HasPrefix(rb, fmt.Sprint(mustGet(t, eff, "prometheusRule", "runbookURL"))+"#") ||
				!(strings.HasPrefix(rb, "https://") || strings.HasPrefix(rb, "http://")) {
				t.Errorf("alert %s runbook_url %q is not the absolute runbookURL + its section", a.Alert, rb)
			}
			if _, old := a.Annotations["runbook"]; old {
				t.Errorf("alert %s still carries the relative runbook annotation", a.Alert)
			}
			sel := fmt.Sprintf(`namespace=%q,job=%q`, namespace, releaseName)
			if s, _ := get(eff, "prometheusRule", "selector"); s == "" && !strings.Contains(a.Expr, sel) {
				t.Errorf("alert %s does not select this release (%s): %s", a.Alert, sel, a.Expr)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("alerts %v, want %v", got, want)
		}
	} else if len(prs) != 0 {
		t.Errorf("PrometheusRule rendered although prometheusRule.enabled is false")
	}

	nps := r.byKind("NetworkPolicy")
	if !on("networkPolicy") {
		if len(nps) != 0 {
			t.Errorf("NetworkPolicy rendered although networkPolicy.enabled is false")
		}
		return
	}
	np := r.one(t, "NetworkPolicy")
	dep := r.one(t, "Deployment")
	if got, want := fmt.Sprint(mustGet(t, np, "spec", "podSelector", "matchLabels")), fmt.Sprint(mustGet(t, dep, "spec", "selector", "matchLabels")); got != want {
		t.Errorf("NetworkPolicy selects %s, Deployment pods %s", got, want)
	}
	peers, _ := get(eff, "networkPolicy", "kafkaPeers")
	restrictEgress := peers != nil && len(peers.([]any)) > 0
	wantTypes := "[Ingress]"
	if restrictEgress {
		wantTypes = "[Ingress Egress]"
	}
	if got := fmt.Sprint(mustGet(t, np, "spec", "policyTypes")); got != wantTypes {
		t.Errorf("policyTypes %s, want %s", got, wantTypes)
	}
	ingress := mustGet(t, np, "spec", "ingress").([]any)
	if len(ingress) != 1 {
		t.Fatalf("want one ingress rule, got %d", len(ingress))
	}
	monNS := fmt.Sprint(mustGet(t, eff, "networkPolicy", "monitoringNamespace"))
	from := mustGet(t, ingress[0], "from").([]any)
	if len(from) != 1 || fmt.Sprint(mustGet(t, from[0], "namespaceSelector", "matchLabels")) != fmt.Sprintf("map[kubernetes.io/metadata.name:%s]", monNS) {
		t.Errorf("ingress from %v, want only namespace %s", from, monNS)
	}
	if ports := mustGet(t, ingress[0], "ports").([]any); len(ports) != 1 || mustGet(t, ports[0], "port") != "http" {
		t.Errorf("ingress ports %v, want only http", ports)
	}
	if !restrictEgress {
		if e, ok := get(np, "spec", "egress"); ok {
			t.Errorf("egress rules %v without kafkaPeers", e)
		}
		return
	}
	egress := mustGet(t, np, "spec", "egress").([]any)
	if len(egress) != 2 {
		t.Fatalf("want egress to the brokers and DNS only, got %d rules", len(egress))
	}
	if got, want := fmt.Sprint(mustGet(t, egress[0], "to")), fmt.Sprint(mustGet(t, eff, "networkPolicy", "kafkaPeers")); got != want {
		t.Errorf("broker egress to %s, want kafkaPeers %s", got, want)
	}
	wantPorts := map[string]bool{}
	for _, b := range mustGet(t, cfg, "kafka", "brokers").([]any) {
		s := fmt.Sprint(b)
		wantPorts[s[strings.LastIndex(s, ":")+1:]] = true
	}
	gotPorts := map[string]bool{}
	for _, p := range mustGet(t, egress[0], "ports").([]any) {
		gotPorts[fmt.Sprint(toInt(mustGet(t, p, "port")))] = true
	}
	if fmt.Sprint(gotPorts) != fmt.Sprint(wantPorts) {
		t.Errorf("broker egress ports %v, want %v (config.kafka.brokers)", gotPorts, wantPorts)
	}
	var dns []string
	for _, p := range mustGet(t, egress[1], "ports").([]any) {
		dns = append(dns, fmt.Sprintf("%v/%v", mustGet(t, p, "protocol"), toInt(mustGet(t, p, "port"))))
	}
	if fmt.Sprint(dns) != "[UDP/53 TCP/53]" {
		t.Errorf("DNS egress ports %v", dns)
	}
}

// checkDashboard validates one dashboard JSON.
func checkDashboard(t *testing.T, name, text string) {
	t.Helper()
	d, err := monitor.ParseDashboard(text)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, e := range d.Validate() {
		t.Errorf("%s: %v", name, e)
	}
	if hc := monitor.HardCoded(text); len(hc) > 0 {
		t.Errorf("%s names a cluster, host or address: %q", name, hc)
	}
	// What the issue asks the dashboard to show, by the metrics it reads.
	var all strings.Builder
	for _, q := range d.Queries() {
		all.WriteString(q.Expr + "\n")
	}
	for _, m := range []string{"dpsurv_records_in_total", "dpsurv_records_out_total", "dpsurv_records_dead_lettered_total",
		"dpsurv_consumer_lag_messages", "dpsurv_batch_latency_seconds_bucket", "dpsurv_ready", "dpsurv_aggregator_leader",
		"dpsurv_releases_total", "dpsurv_releases_withheld_total", "dpsurv_privacy_budget_spent",
		"dpsurv_privacy_budget_remaining", "dpsurv_privacy_budget_limit"} {
		if !strings.Contains(all.String(), m+"{") {
			t.Errorf("%s: no panel reads %s", name, m)
		}
	}
	if !strings.Contains(all.String(), "by (reason)") {
		t.Errorf("%s: dead letters are not broken down by reason", name)
	}
}

// TestDashboardValidation validates the dashboard as rendered with every
// example (dashboard.enabled forced on) and checks that the validator
// rejects the faults it is there for.
func TestDashboardValidation(t *testing.T) {
	for _, f := range examples(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := mustRender(t, values(t, f, "dashboard.enabled=true"))
			dash, err := monitor.DashboardsIn(r.Rendered, "grafana_dashboard", "1")
			if err != nil || len(dash) != 1 {
				t.Fatalf("dashboards %d, %v", len(dash), err)
			}
			for name, text := range dash {
				checkDashboard(t, name, text)
			}
		})
	}
	t.Run("faults are caught", func(t *testing.T) {
		src, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "dpsurv.json"))
		if err != nil {
			t.Fatal(err)
		}
		good := string(src)
		for _, tc := range []struct{ name, old, new string }{
			{"fixed datasource uid", `"uid": "${datasource}"`, `"uid": "P1809F7CD0C75ACF3"`},
			{"hard-coded namespace in a variable", `namespace=\"$namespace\"`, `namespace=\"dpsurv\"`},
			{"hard-coded namespace in a panel", `namespace=\"$namespace\",job=\"$job\"}[$__rate_interval]`, `namespace=\"dpsurv\",job=\"$job\"}[$__rate_interval]`},
			{"cluster label", `job=\"$job\"`, `job=\"$job\",cluster=\"prod-eu\"`},
			{"in-cluster host", `"dpsurv stream`, `"kafka.dpsurv.svc dpsurv stream`},
			{"broken JSON", `"panels": [`, `"panels": [[`},
		} {
			bad := strings.Replace(good, tc.old, tc.new, 1)
			if bad == good {
				t.Fatalf("%s: %q not found in the dashboard", tc.name, tc.old)
			}
			d, err := monitor.ParseDashboard(bad)
			if err == nil && len(d.Validate()) == 0 && len(monitor.HardCoded(bad)) == 0 {
				t.Errorf("%s: accepted", tc.name)
			}
		}
	})
}

// promtool returns the promtool binary or skips the test when it is
// absent (.ci/run installs Debian's prometheus package, which ships it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus); .ci/run installs it")
	}
	return p
}

// renderedRules renders the chart with the hardened example (which enables
// the PrometheusRule and has aggregators) and writes its rule groups as a
// Prometheus rules file into dir.
func renderedRules(t *testing.T, dir string, sets ...string) []monitor.RuleGroup {
	t.Helper()
	return writeRules(t, dir, values(t, filepath.Join(chartDir, "examples", "hardened.yaml"), sets...))
}

// writeRules renders the chart with vals and writes its rule groups as a
// Prometheus rules file, rules.yaml, into dir.
func writeRules(t *testing.T, dir string, vals map[string]any) []monitor.RuleGroup {
	t.Helper()
	r := mustRender(t, vals)
	groups, err := monitor.RulesIn(r.Rendered)
	if err != nil {
		t.Fatal(err)
	}
	b, err := monitor.RulesFile(groups)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return groups
}

func runTool(t *testing.T, dir, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestAlertRules runs `promtool check rules` on the rules rendered with
// every example (prometheusRule forced on), and `promtool test rules` with
// testdata/alerts.test.yaml on the hardened example's: each alert fires on
// a synthetic series and stays silent on a healthy one. A rule unit file
// that promtool cannot fail would prove nothing, so a rendering with a
// changed threshold must fail it.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	for _, f := range examples(t) {
		t.Run("check/"+filepath.Base(f), func(t *testing.T) {
			dir := t.TempDir()
			writeRules(t, dir, values(t, f, "prometheusRule.enabled=true"))
			if out, err := runTool(t, dir, bin, "check", "rules", "rules.yaml"); err != nil {
				t.Fatalf("promtool check rules: %v\n%s", err, out)
			}
		})
	}

	unit, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Every alert has a firing and a silent case in the unit file.
	for _, a := range wantAlerts {
		if n := strings.Count(string(unit), "alertname: "+a+"\n"); n < 2 {
			t.Errorf("testdata/alerts.test.yaml: %d cases for %s, want a firing and a silent one", n, a)
		}
	}
	run := func(t *testing.T, unit []byte, sets ...string) (string, error) {
		dir := t.TempDir()
		renderedRules(t, dir, sets...)
		if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), unit, 0o600); err != nil {
			t.Fatal(err)
		}
		return runTool(t, dir, bin, "test", "rules", "alerts.test.yaml")
	}
	t.Run("unit", func(t *testing.T) {
		out, err := run(t, unit)
		if err != nil {
			t.Fatalf("promtool test rules: %v\n%s", err, out)
		}
		if !strings.Contains(out, "SUCCESS") {
			t.Fatalf("promtool test rules did not report SUCCESS:\n%s", out)
		}
	})
	// The unit tests sit at the thresholds: moving one breaks the cases of
	// its alert. Each run keeps only that alert's cases (a ninth of the
	// file: promtool's 0.9 CPU-s a run were the evaluation of all of them).
	for _, m := range []struct{ set, alert string }{
		{"json:prometheusRule.budgetRatio=0.9", "DpsurvPrivacyBudgetHigh"},
		{"prometheusRule.notReadyFor=20m", "DpsurvNotReady"},
		{"prometheusRule.lagThreshold=5000", "DpsurvConsumerLagGrowing"},
		{"json:prometheusRule.deadLetterRatio=0.5", "DpsurvDeadLetterRateHigh"},
		{"prometheusRule.noLeaseHolderFor=30m", "DpsurvNoLeaseHolder"},
		{"prometheusRule.twoLeaseHoldersFor=30m", "DpsurvTwoLeaseHolders"},
		{"prometheusRule.stalledPartitionsFor=30m", "DpsurvStalledPartitions"},
		{"prometheusRule.pendingWindowsThreshold=12", "DpsurvPendingWindowsHigh"},
		{"prometheusRule.pendingWindowsFor=30m", "DpsurvPendingWindowsHigh"},
	} {
		t.Run("detects "+m.set, func(t *testing.T) {
			only := unitCasesOf(t, unit, m.alert)
			if out, err := run(t, only); err != nil {
				t.Fatalf("promtool test rules failed on %s's cases at the default thresholds: %v\n%s", m.alert, err, out)
			}
			out, err := run(t, only, m.set)
			if err == nil {
				t.Fatalf("promtool test rules passed %s's cases with %s:\n%s", m.alert, m.set, out)
			}
		})
	}
}

// unitCasesOf returns the promtool rule unit file unit with only the test
// cases that check alert.
func unitCasesOf(t *testing.T, unit []byte, alert string) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(unit, &doc); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, c := range doc["tests"].([]any) {
		for _, a := range c.(map[string]any)["alert_rule_test"].([]any) {
			if a.(map[string]any)["alertname"] == alert {
				kept = append(kept, c)
				break
			}
		}
	}
	if len(kept) == 0 {
		t.Fatalf("no unit test case checks %s", alert)
	}
	doc["tests"] = kept
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWithBool checks the rewrite the Prometheus test applies to alert
// expressions.
func TestWithBool(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`a > 0.8`, `a > bool 0.8`},
		{`a{x="1",y!="2",z=~"a|b"} == 0 or b{} >= 1`, `a{x="1",y!="2",z=~"a|b"} == bool 0 or b{} >= bool 1`},
		{`sum by (j) (x) < 1 or absent(x{j="a>b"})`, `sum by (j) (x) < bool 1 or absent(x{j="a>b"})`},
		{`x != bool 0`, `x != bool 0`},
		{`x <= 3 and y != 2`, `x <= bool 3 and y != bool 2`},
	} {
		if got := monitor.WithBool(tc.in); got != tc.want {
			t.Errorf("WithBool(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := fmt.Sprint(monitor.MetricNames(`rate(dpsurv_a_total{x="1"}[5m]) / up{} + dpsurv_b[1m] + dpsurv_c`)); got != "[dpsurv_a_total dpsurv_b up]" {
		t.Errorf("MetricNames = %s", got)
	}
}
