// Package promcheck proves the chart's dashboard and alerts against a real
// Prometheus: it runs `dpsurv run` on the embedded broker with the config
// the chart renders, lets a Prometheus server (Debian's prometheus package)
// scrape it and evaluate the chart's alert rules, then evaluates every
// dashboard panel's PromQL and every alert expression through the HTTP API
// and asserts that each returns a series — so a renamed metric breaks the
// build, not the dashboard.
package promcheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"
	"sigs.k8s.io/yaml"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/synth"
	"github.com/dpsurv/dpsurv/tools/helm/internal/chartrender"
	"github.com/dpsurv/dpsurv/tools/helm/internal/monitor"
)

const (
	chartDir    = "../../../deploy/helm/dpsurv"
	repoRoot    = "../../.."
	releaseName = "dpsurv"
	namespace   = "dpsurv"
)

// TestDashboardAndAlertsOnPrometheus is the end-to-end check of the chart's
// monitoring. The service runs the hardened example's config with the
// brokers, TLS/SASL and aggregators replaced for the embedded broker: one
// km aggregate on 2 s processing-time windows at epsilon 1 and a stream
// budget of 6 (each window charged 2: its replace-one cost beside the sanitized topic), so that three windows are released and the later ones are
// withheld for budget — the withheld and budget alerts then fire for real,
// and the health alerts must not.
func TestDashboardAndAlertsOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dpsurv run and a Prometheus server (~30 s): full tier only")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (apt-get install prometheus; .ci/run installs it): the dashboard and alerts are not checked against a live server")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	start := time.Now()
	stage := func(what string) { t.Logf("%5.1f s  %s", time.Since(start).Seconds(), what) }
	bin := buildDpsurv(t, dir)
	stage("built dpsurv")
	cluster, err := broker.Start(broker.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Close() })

	// The chart's rendering: config, rules, dashboard.
	httpPort := freePort(t)
	vals, err := chartrender.Values(filepath.Join(chartDir, "examples", "hardened.yaml"),
		"json:config.kafka.brokers="+mustJSON([]string{cluster.Addrs()[0]}),
		"config.kafka.tls.enabled=false", "config.kafka.tls.server_name=",
		"config.kafka.sasl.mechanism=", "config.kafka.sasl.username=",
		"secrets.kafka.existingSecret=", "secrets.tls.existingSecret=",
		`json:config.aggregators=[{"name":"km","kind":"km","epsilon":1,"window":{"size":"2s","lateness":"0s","time":"processing"},"params":{"method":"noisy-histogram","bin_width":500}}]`,
		"json:config.ledger.budget={\"stream\":6}", "config.ledger.checkpoint_interval=1s",
		"json:config.input.max_batch=4",
		fmt.Sprintf("config.http.listen=:%d", httpPort))
	if err != nil {
		t.Fatal(err)
	}
	r, err := chartrender.Render(chartDir, releaseName, namespace, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	groups, err := monitor.RulesIn(r)
	if err != nil {
		t.Fatal(err)
	}
	dashes, err := monitor.DashboardsIn(r, "grafana_dashboard", "1")
	if err != nil || len(dashes) != 1 {
		t.Fatalf("rendered dashboards: %d, %v", len(dashes), err)
	}
	var dash monitor.Dashboard
	for _, text := range dashes {
		if dash, err = monitor.ParseDashboard(text); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := serviceConfig(t, r, dir, httpPort)
	cfg, err := app.LoadConfig(cfgPath)
	if err != nil {
		t.Fatalf("the chart's config does not load: %v", err)
	}

	// dpsurv run, then input: a stream of good batches and one undecodable
	// message (a dead letter).
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	startProcess(t, filepath.Join(dir, "dpsurv.log"), bin, "run", "--config", cfgPath)
	waitHTTP(t, ctx, "http://"+metricsAddr+"/readyz", 60*time.Second)
	stage("dpsurv run ready")
	d, err := synth.Generate(synth.Options{N: 600, Cohorts: cfg.Schema.Cohorts, TimeMax: cfg.Schema.TimeMax, Seed: 15})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := harness.Messages(cfg.Spec(), d, 20, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs[:1], append([]message.Message{{Key: []byte("garbage"), Value: []byte("not an arrow stream")}}, msgs[1:]...)...)
	produced := make(chan error, 1)
	go func() {
		w, err := sinks.NewKafka(sinks.KafkaConfig{Conn: cfg.Kafka, Topic: cfg.Input.Topic}, zap.NewNop())
		if err != nil {
			produced <- err
			return
		}
		defer w.Close()
		for i := range msgs {
			if err := w.Write(ctx, msgs[i:i+1]); err != nil {
				produced <- err
				return
			}
			time.Sleep(400 * time.Millisecond) // records in several windows
		}
		produced <- nil
	}()

	// Prometheus: loopback, temporary storage, the chart's rules, scraping
	// the service as the ServiceMonitor would (job = the release's full
	// name, a namespace label).
	rules, err := monitor.RulesFile(groups)
	if err != nil {
		t.Fatal(err)
	}
	promAddr := startPrometheus(t, promBin, dir, rules, metricsAddr)
	api := &promAPI{base: "http://" + promAddr}
	stage("prometheus ready")

	sel := fmt.Sprintf(`namespace=%q,job=%q`, namespace, releaseName)
	// Wait until windows were released and one was withheld for budget.
	waitQuery(t, ctx, api, fmt.Sprintf(`sum(dpsurv_releases_total{%s}) >= 3 and sum(dpsurv_releases_withheld_total{%s,reason="budget_exceeded"}) > 0`, sel, sel), 120*time.Second)
	stage("windows released and withheld")
	if err := <-produced; err != nil {
		t.Fatalf("produce: %v", err)
	}
	stage("input produced")
	// A few more scrapes so that rates and increases see the last changes.
	time.Sleep(3 * time.Second)

	// Every dashboard panel query returns a series.
	vars := strings.NewReplacer("$namespace", namespace, "$job", releaseName,
		"$__rate_interval", "30s", "$__range", "5m", "$__interval", "5s")
	queries := dash.Queries()
	if len(queries) < 12 {
		t.Fatalf("dashboard has %d queries", len(queries))
	}
	names := map[string]bool{}
	for _, q := range queries {
		expr := vars.Replace(q.Expr)
		if strings.Contains(expr, "$") {
			t.Errorf("panel %q: unresolved variable in %s", q.Panel, expr)
			continue
		}
		if n := api.series(t, expr); n == 0 {
			t.Errorf("panel %q target %s returns no series: %s", q.Panel, q.RefID, expr)
		}
		for _, m := range monitor.MetricNames(q.Expr) {
			names[m] = true
		}
	}
	// The namespace and job variables find this release: label_values(expr,
	// label) is evaluated as count by (label) (expr).
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(expr, label)", v.Name, q.Query)
			continue
		}
		want := map[string]string{"namespace": namespace, "job": releaseName}[m[2]]
		expr := fmt.Sprintf("count by (%s) (%s)", m[2], vars.Replace(m[1]))
		found := false
		for _, l := range api.labels(t, expr) {
			found = found || l[m[2]] == want
		}
		if !found {
			t.Errorf("variable %s: %s does not offer %q", v.Name, expr, want)
		}
	}
	// Every alert expression returns a series: comparisons in bool form,
	// so a healthy value still yields a sample.
	alerts := monitor.Alerts(groups)
	if len(alerts) != 9 {
		t.Fatalf("%d alerts rendered, want 9", len(alerts))
	}
	for _, a := range alerts {
		expr := monitor.WithBool(a.Expr)
		if n := api.series(t, expr); n == 0 {
			t.Errorf("alert %s: no series for %s", a.Alert, expr)
		}
		for _, m := range monitor.MetricNames(a.Expr) {
			names[m] = true
		}
	}
	// And every metric any of them reads exists for this release (an
	// "or vector(0)"/absent() fallback cannot hide a renamed metric).
	for m := range names {
		if n := api.series(t, fmt.Sprintf("%s{%s}", m, sel)); n == 0 {
			t.Errorf("metric %s has no series from the running service", m)
		}
	}

	// Prometheus evaluated the rules without error; the budget and withheld
	// alerts fire, the health alerts do not.
	stage("queries evaluated")
	health := api.ruleHealth(t)
	for _, a := range alerts {
		if h := health[a.Alert]; h.Health != "ok" {
			t.Errorf("rule %s health %q: %s", a.Alert, h.Health, h.LastError)
		}
	}
	want := map[string]string{
		"DpsurvWindowWithheld": "firing", "DpsurvPrivacyBudgetHigh": "firing",
		"DpsurvNotReady": "inactive", "DpsurvNoLeaseHolder": "inactive", "DpsurvTwoLeaseHolders": "inactive",
		"DpsurvDeadLetterRateHigh": "", // 1 of ~600 records: under 1%, but the 5m rate may still be settling
		"DpsurvConsumerLagGrowing": "inactive",
		"DpsurvStalledPartitions":  "inactive", "DpsurvPendingWindowsHigh": "inactive",
	}
	for alert, state := range want {
		if state != "" && health[alert].State != state {
			t.Errorf("alert %s is %q, want %q", alert, health[alert].State, state)
		}
	}
}

// buildDpsurv builds the service binary from the repository.
func buildDpsurv(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "dpsurv")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dpsurv")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dpsurv: %v\n%s", err, out)
	}
	return bin
}

// serviceConfig writes the rendered config with the chart's secret paths
// replaced by a test key, and the HTTP server on loopback (the chart
// listens on every interface of the pod; the test host is no pod).
func serviceConfig(t *testing.T, r chartrender.Rendered, dir string, port int) string {
	t.Helper()
	cfg, _, err := r.ServiceConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "prf.key")
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg["sanitizers"].(map[string]any)["key_file"] = keyPath
	cfg["http"] = map[string]any{"listen": fmt.Sprintf("127.0.0.1:%d", port)}
	cfg["log"] = map[string]any{"level": "info"}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startPrometheus runs a Prometheus server on a loopback port with its
// storage, config and console directories under dir (nothing from
// /etc/prometheus), stopped at cleanup. It returns the server's address
// once it is ready.
func startPrometheus(t *testing.T, bin, dir string, rules []byte, target string) string {
	t.Helper()
	pdir := filepath.Join(dir, "prometheus")
	if err := os.MkdirAll(filepath.Join(pdir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
        labels:
          namespace: %s
`, filepath.Join(pdir, "rules.yaml"), releaseName, target, namespace)
	confPath := filepath.Join(pdir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startProcess(t, filepath.Join(pdir, "prometheus.log"), bin,
		"--config.file="+confPath,
		"--storage.tsdb.path="+filepath.Join(pdir, "data"),
		"--web.listen-address="+addr,
		"--web.console.templates="+pdir,
		"--web.console.libraries="+pdir,
		"--log.level=warn")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitHTTP(t, ctx, "http://"+addr+"/-/ready", 60*time.Second)
	return addr
}

// startProcess starts a process with its output in logPath; at cleanup it
// gets SIGTERM, then SIGKILL after 15 s, and is waited for. A failed test
// prints the log's tail.
func startProcess(t *testing.T, logPath, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("start %s: %v", filepath.Base(bin), err)
	}
	done := make(chan struct{})
	var once sync.Once
	go func() { _ = cmd.Wait(); once.Do(func() { close(done) }) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not stop within 15 s of SIGTERM; killing it", filepath.Base(bin))
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				t.Logf("%s log tail:\n%s", filepath.Base(bin), b)
			}
		}
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// waitHTTP polls url until it answers 200.
func waitHTTP(t *testing.T, ctx context.Context, u string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := http.Get(u)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready within %v: %s", u, timeout, last)
}

// promAPI queries the Prometheus HTTP API.
type promAPI struct{ base string }

func (p *promAPI) get(t *testing.T, path string, q url.Values, out any) {
	t.Helper()
	resp, err := http.Get(p.base + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(buf.Bytes(), &env); err != nil {
		t.Fatalf("%s: %v: %s", path, err, buf.String())
	}
	if env.Status != "success" {
		t.Fatalf("%s %v: %s", path, q, env.Error)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatal(err)
	}
}

// series evaluates an instant query and returns the number of series.
func (p *promAPI) series(t *testing.T, expr string) int {
	t.Helper()
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	p.get(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	if data.ResultType != "vector" {
		t.Errorf("%s: result type %s, want vector", expr, data.ResultType)
	}
	return len(data.Result)
}

// labels evaluates an instant query and returns each series' labels.
func (p *promAPI) labels(t *testing.T, expr string) []map[string]string {
	t.Helper()
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	p.get(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	var out []map[string]string
	for _, r := range data.Result {
		out = append(out, r.Metric)
	}
	return out
}

// waitQuery polls until expr returns a series.
func waitQuery(t *testing.T, ctx context.Context, p *promAPI, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if p.series(t, expr) > 0 {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("no series for %s within %v", expr, timeout)
}

type ruleState struct {
	Health, LastError, State string
}

// ruleHealth returns every alerting rule's health and state.
func (p *promAPI) ruleHealth(t *testing.T) map[string]ruleState {
	t.Helper()
	var data struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Type      string `json:"type"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
				State     string `json:"state"`
			} `json:"rules"`
		} `json:"groups"`
	}
	p.get(t, "/api/v1/rules", url.Values{}, &data)
	out := map[string]ruleState{}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			out[r.Name] = ruleState{Health: r.Health, LastError: r.LastError, State: r.State}
		}
	}
	return out
}
