package helmtest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Paths the chart mounts secret material at; the rendered config must refer
// to these and nothing else.
const (
	keyFile      = "/var/run/dpsurv/key/prf.key"
	passwordFile = "/var/run/dpsurv/kafka/password"
	caFile       = "/var/run/dpsurv/tls/ca.crt"
	certFile     = "/var/run/dpsurv/tls/tls.crt"
	tlsKeyFile   = "/var/run/dpsurv/tls/tls.key"
)

// TestLintAndTemplate lints and renders the default values and every example
// values file, and checks the invariants every rendering must keep.
func TestLintAndTemplate(t *testing.T) {
	cases := []struct{ name, file string }{{"default", ""}}
	for _, f := range examples(t) {
		cases = append(cases, struct{ name, file string }{filepath.Base(f), f})
	}
	// The examples the docs promise must exist.
	for _, want := range []string{"single-hospital.yaml", "sasl-tls.yaml", "mtls.yaml", "scaled.yaml", "hardened.yaml"} {
		found := false
		for _, c := range cases {
			found = found || c.name == want
		}
		if !found {
			t.Errorf("examples/%s is missing", want)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals := values(t, tc.file)
			for _, m := range lintChart(vals) {
				t.Errorf("helm lint --strict: %v", m)
			}
			r := mustRender(t, vals)
			checkInvariants(t, r, effective(t, vals))
		})
	}
}

// checkInvariants asserts what must hold for any accepted values.
func checkInvariants(t *testing.T, r rendered, eff map[string]any) {
	t.Helper()
	allowed := map[string]bool{
		"ConfigMap": true, "Deployment": true, "Service": true, "ServiceAccount": true,
		"PodDisruptionBudget": true, "HorizontalPodAutoscaler": true, "ServiceMonitor": true,
		"PrometheusRule": true, "NetworkPolicy": true,
	}
	for _, o := range r.Objects {
		kind, _ := o["kind"].(string)
		if !allowed[kind] {
			// In particular: the chart never creates a Secret.
			t.Errorf("unexpected object kind %q", kind)
		}
		want := namespace
		if _, isDashboard := get(o, "data", "dpsurv.json"); isDashboard {
			if dns, _ := get(eff, "dashboard", "namespace"); dns != "" && dns != nil {
				want = fmt.Sprint(dns) // where the Grafana sidecar looks
			}
		}
		if kind == "ServiceMonitor" {
			if sns, _ := get(eff, "serviceMonitor", "namespace"); sns != "" && sns != nil {
				want = fmt.Sprint(sns) // where the Prometheus selects ServiceMonitors
			}
		}
		if ns, _ := get(o, "metadata", "namespace"); ns != want {
			t.Errorf("%s: namespace %v, want %s", kind, ns, want)
		}
	}

	checkSecurityContext(t, r)
	checkProbesAndPorts(t, r)
	checkConfigAndSecrets(t, r, eff)
	checkScaling(t, r, eff)
	checkNotes(t, r, eff)
	checkMonitoring(t, r, eff)

	// PodDisruptionBudget present and selecting the Deployment's pods.
	pdb := r.one(t, "PodDisruptionBudget")
	if v := mustGet(t, pdb, "apiVersion"); v != "policy/v1" {
		t.Errorf("PDB apiVersion %v", v)
	}
	_, hasMax := get(pdb, "spec", "maxUnavailable")
	_, hasMin := get(pdb, "spec", "minAvailable")
	if hasMax == hasMin {
		t.Errorf("PDB must set exactly one of maxUnavailable/minAvailable: %v", pdb["spec"])
	}
	dep := r.one(t, "Deployment")
	sel := fmt.Sprint(mustGet(t, dep, "spec", "selector", "matchLabels"))
	if got := fmt.Sprint(mustGet(t, pdb, "spec", "selector", "matchLabels")); got != sel {
		t.Errorf("PDB selector %s, Deployment selector %s", got, sel)
	}

	// ServiceMonitor only when enabled.
	smOn, _ := get(eff, "serviceMonitor", "enabled")
	sms := r.byKind("ServiceMonitor")
	if smOn == true {
		if len(sms) != 1 {
			t.Fatalf("serviceMonitor.enabled: want 1 ServiceMonitor, got %d", len(sms))
		}
		ep := mustGet(t, sms[0], "spec", "endpoints", 0)
		if p := mustGet(t, ep, "path"); p != "/metrics" {
			t.Errorf("ServiceMonitor path %v", p)
		}
		if p := mustGet(t, ep, "port"); p != "http" {
			t.Errorf("ServiceMonitor port %v", p)
		}
	} else if len(sms) != 0 {
		t.Errorf("ServiceMonitor rendered although serviceMonitor.enabled is false")
	}
}

func checkSecurityContext(t *testing.T, r rendered) {
	t.Helper()
	dep := r.one(t, "Deployment")
	pod := mustGet(t, dep, "spec", "template", "spec")
	want := []struct {
		path []any
		val  any
	}{
		{[]any{"securityContext", "runAsNonRoot"}, true},
		{[]any{"securityContext", "seccompProfile", "type"}, "RuntimeDefault"},
		{[]any{"automountServiceAccountToken"}, false},
	}
	for _, w := range want {
		if got, _ := get(pod, w.path...); got != w.val {
			t.Errorf("pod %v = %v, want %v", w.path, got, w.val)
		}
	}
	if uid, _ := get(pod, "securityContext", "runAsUser"); toInt(uid) < 1 {
		t.Errorf("pod runAsUser %v, want non-root", uid)
	}
	c := container(t, r)
	cwant := []struct {
		path []any
		val  any
	}{
		{[]any{"securityContext", "runAsNonRoot"}, true},
		{[]any{"securityContext", "readOnlyRootFilesystem"}, true},
		{[]any{"securityContext", "allowPrivilegeEscalation"}, false},
		{[]any{"securityContext", "privileged"}, false},
		{[]any{"securityContext", "seccompProfile", "type"}, "RuntimeDefault"},
		{[]any{"securityContext", "capabilities", "drop", 0}, "ALL"},
	}
	for _, w := range cwant {
		if got, _ := get(c, w.path...); got != w.val {
			t.Errorf("container %v = %v, want %v", w.path, got, w.val)
		}
	}
	if add, ok := get(c, "securityContext", "capabilities", "add"); ok {
		t.Errorf("container adds capabilities %v", add)
	}
	if uid, _ := get(c, "securityContext", "runAsUser"); toInt(uid) != 65532 && toInt(uid) < 1 {
		t.Errorf("container runAsUser %v", uid)
	}
	if _, ok := get(c, "resources", "requests", "memory"); !ok {
		t.Errorf("container has no memory request")
	}
	if _, ok := get(c, "resources", "limits", "memory"); !ok {
		t.Errorf("container has no memory limit")
	}
	// A writable /tmp is the only writable path.
	mounts, _ := get(c, "volumeMounts")
	for _, m := range mounts.([]any) {
		mp := mustGet(t, m, "mountPath")
		ro, _ := get(m, "readOnly")
		if mp != "/tmp" && ro != true {
			t.Errorf("mount %v is writable", mp)
		}
	}
}

func checkProbesAndPorts(t *testing.T, r rendered) {
	t.Helper()
	c := container(t, r)
	if got := fmt.Sprint(mustGet(t, c, "args")); got != "[run --config /etc/dpsurv/config.yaml]" {
		t.Errorf("args %s", got)
	}
	cfg, _ := configOf(t, r)
	listen := mustGet(t, cfg, "http", "listen").(string)
	wantPort, err := strconv.Atoi(listen[strings.LastIndex(listen, ":")+1:])
	if err != nil {
		t.Fatalf("http.listen %q: %v", listen, err)
	}
	port := mustGet(t, c, "ports", 0)
	if mustGet(t, port, "name") != "http" || toInt(mustGet(t, port, "containerPort")) != wantPort {
		t.Errorf("container port %v, want http/%d", port, wantPort)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got, _ := get(c, probe, "httpGet", "path"); got != path {
			t.Errorf("%s path %v, want %s", probe, got, path)
		}
		if got, _ := get(c, probe, "httpGet", "port"); got != "http" {
			t.Errorf("%s port %v, want http", probe, got)
		}
		if p, _ := get(c, probe, "periodSeconds"); toInt(p) < 1 {
			t.Errorf("%s periodSeconds %v", probe, p)
		}
	}
	svc := r.one(t, "Service")
	if tp := mustGet(t, svc, "spec", "ports", 0, "targetPort"); tp != "http" {
		t.Errorf("Service targetPort %v", tp)
	}
	dep := r.one(t, "Deployment")
	if got, want := fmt.Sprint(mustGet(t, svc, "spec", "selector")), fmt.Sprint(mustGet(t, dep, "spec", "selector", "matchLabels")); got != want {
		t.Errorf("Service selector %s, Deployment selector %s", got, want)
	}
	ann := mustGet(t, dep, "spec", "template", "metadata", "annotations", "checksum/config")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(fmt.Sprint(ann)) {
		t.Errorf("checksum/config annotation %v", ann)
	}
}

// secretish matches config keys that would hold secret material itself
// rather than a path to it.
var secretish = regexp.MustCompile(`(?i)(password|passwd|secret|token|credential|private|(^|_)key)$`)

// checkConfigAndSecrets asserts that the rendered config carries no secret
// material, that every *_file it names is mounted from the right Secret, and
// that the config has the service's top-level shape.
func checkConfigAndSecrets(t *testing.T, r rendered, eff map[string]any) {
	t.Helper()
	cfg, text := configOf(t, r)
	for _, k := range []string{"kafka", "input", "schema", "sanitizers", "output", "aggregators", "ledger", "http", "log"} {
		if _, ok := cfg[k]; !ok {
			t.Errorf("rendered config lacks %q", k)
		}
	}
	if len(cfg) != 9 {
		t.Errorf("rendered config has %d top-level keys, want 9: %v", len(cfg), keys(cfg))
	}
	for _, bad := range []string{"-----BEGIN", "PRIVATE KEY"} {
		if strings.Contains(text, bad) {
			t.Errorf("ConfigMap contains %q", bad)
		}
	}
	walk(cfg, "", func(path string, v any) {
		leaf := path[strings.LastIndex(path, ".")+1:]
		if secretish.MatchString(leaf) {
			t.Errorf("config key %s looks like secret material", path)
		}
	})

	// Secret volumes: volume name -> (secretName, item path -> key).
	dep := r.one(t, "Deployment")
	pod := mustGet(t, dep, "spec", "template", "spec")
	type secretVol struct {
		secret string
		items  map[string]string
	}
	vols := map[string]secretVol{}
	for _, v := range mustGet(t, pod, "volumes").([]any) {
		s, ok := get(v, "secret")
		if !ok {
			continue
		}
		sv := secretVol{secret: fmt.Sprint(mustGet(t, s, "secretName")), items: map[string]string{}}
		items, _ := get(s, "items")
		if items == nil {
			t.Errorf("secret volume %v mounts every key; want explicit items", mustGet(t, v, "name"))
			continue
		}
		for _, it := range items.([]any) {
			sv.items[fmt.Sprint(mustGet(t, it, "path"))] = fmt.Sprint(mustGet(t, it, "key"))
		}
		vols[fmt.Sprint(mustGet(t, v, "name"))] = sv
	}
	// mountedFile reports the Secret and key behind an absolute file path.
	mountedFile := func(path string) (secret, key string, ok bool) {
		for _, m := range mustGet(t, container(t, r), "volumeMounts").([]any) {
			dir := fmt.Sprint(mustGet(t, m, "mountPath"))
			if filepath.Dir(path) != dir {
				continue
			}
			sv, isSecret := vols[fmt.Sprint(mustGet(t, m, "name"))]
			if !isSecret {
				return "", "", false
			}
			k, ok := sv.items[filepath.Base(path)]
			return sv.secret, k, ok
		}
		return "", "", false
	}

	effStr := func(path ...any) string {
		v, _ := get(eff, path...)
		if v == nil {
			return ""
		}
		return fmt.Sprint(v)
	}
	prfSecret := effStr("secrets", "prfKey", "existingSecret")
	if prfSecret == "" {
		prfSecret = releaseName + "-prf-key"
	}
	mech := effStr("config", "kafka", "sasl", "mechanism")
	saslOn := mech != "" && mech != "oauthbearer"
	tlsSecret := ""
	if effStr("config", "kafka", "tls", "enabled") == "true" {
		tlsSecret = effStr("secrets", "tls", "existingSecret")
	}
	files := []struct {
		path      []any
		want      string // "" when the file must not be configured
		secret    string
		secretKey string
	}{
		{[]any{"sanitizers", "key_file"}, keyFile, prfSecret, effStr("secrets", "prfKey", "key")},
		{[]any{"kafka", "sasl", "password_file"}, ifThen(saslOn, passwordFile), effStr("secrets", "kafka", "existingSecret"), effStr("secrets", "kafka", "passwordKey")},
		{[]any{"kafka", "tls", "ca_file"}, ifThen(tlsSecret != "" && effStr("secrets", "tls", "caKey") != "", caFile), tlsSecret, effStr("secrets", "tls", "caKey")},
		{[]any{"kafka", "tls", "cert_file"}, ifThen(tlsSecret != "" && effStr("secrets", "tls", "certKey") != "", certFile), tlsSecret, effStr("secrets", "tls", "certKey")},
		{[]any{"kafka", "tls", "key_file"}, ifThen(tlsSecret != "" && effStr("secrets", "tls", "keyKey") != "", tlsKeyFile), tlsSecret, effStr("secrets", "tls", "keyKey")},
	}
	if mech == "oauthbearer" {
		files = append(files, struct {
			path      []any
			want      string
			secret    string
			secretKey string
		}{[]any{"kafka", "sasl", "oauth", "client_secret_file"}, "/var/run/dpsurv/kafka/client-secret", effStr("secrets", "kafka", "existingSecret"), effStr("secrets", "kafka", "clientSecretKey")})
	}
	for _, f := range files {
		got, ok := get(cfg, f.path...)
		if !ok {
			t.Errorf("config %v missing", f.path)
			continue
		}
		if got != f.want {
			t.Errorf("config %v = %q, want %q", f.path, got, f.want)
			continue
		}
		if f.want == "" {
			continue
		}
		secret, key, ok := mountedFile(f.want)
		if !ok {
			t.Errorf("config %v = %s is not mounted from a Secret", f.path, f.want)
			continue
		}
		if secret != f.secret || key != f.secretKey {
			t.Errorf("%s comes from secret %s key %s, want %s key %s", f.want, secret, key, f.secret, f.secretKey)
		}
	}
}

func checkScaling(t *testing.T, r rendered, eff map[string]any) {
	t.Helper()
	e := eff
	partitions := toInt(mustGet(t, e, "input", "partitions"))
	dep := r.one(t, "Deployment")
	hpas := r.byKind("HorizontalPodAutoscaler")
	if on, _ := get(e, "autoscaling", "enabled"); on == true {
		if len(hpas) != 1 {
			t.Fatalf("autoscaling.enabled: want 1 HPA, got %d", len(hpas))
		}
		if max := toInt(mustGet(t, hpas[0], "spec", "maxReplicas")); max > partitions || max < 1 {
			t.Errorf("HPA maxReplicas %d, partitions %d", max, partitions)
		}
		if ref := mustGet(t, hpas[0], "spec", "scaleTargetRef", "name"); ref != mustGet(t, dep, "metadata", "name") {
			t.Errorf("HPA targets %v", ref)
		}
		if _, ok := get(dep, "spec", "replicas"); ok {
			t.Errorf("Deployment sets replicas although an HPA owns them")
		}
	} else {
		if len(hpas) != 0 {
			t.Errorf("HPA rendered although autoscaling is disabled")
		}
		if n := toInt(mustGet(t, dep, "spec", "replicas")); n < 1 || n > partitions {
			t.Errorf("replicas %d, partitions %d", n, partitions)
		}
	}
}

func checkNotes(t *testing.T, r rendered, eff map[string]any) {
	t.Helper()
	dlt := fmt.Sprint(mustGet(t, eff, "config", "output", "dead_letter_topic"))
	for _, want := range []string{"THE DEAD-LETTER TOPIC IS AS SENSITIVE AS THE INPUT TOPIC", dlt, "kubectl", "/healthz"} {
		if !strings.Contains(r.Notes, want) {
			t.Errorf("NOTES.txt lacks %q", want)
		}
	}
	// The notes say which monitoring objects are on, and how to switch on the others.
	for _, m := range []string{"serviceMonitor", "dashboard", "prometheusRule", "networkPolicy"} {
		enabled, _ := get(eff, m, "enabled")
		hint := "--set " + m + ".enabled=true"
		if got := strings.Contains(r.Notes, hint); got == (enabled == true) {
			t.Errorf("NOTES.txt: %s.enabled=%v but the hint %q present=%v", m, enabled, hint, got)
		}
	}
	if strings.Contains(r.Notes, "<no value>") {
		t.Errorf("NOTES.txt renders <no value>:\n%s", r.Notes)
	}
}

// TestChecksumAnnotation checks that the config checksum is deterministic,
// changes with every config value and only with config-relevant values.
func TestChecksumAnnotation(t *testing.T) {
	sum := func(t *testing.T, sets ...string) string {
		t.Helper()
		r := mustRender(t, values(t, "", sets...))
		return fmt.Sprint(mustGet(t, r.one(t, "Deployment"), "spec", "template", "metadata", "annotations", "checksum/config"))
	}
	base := sum(t)
	if again := sum(t); again != base {
		t.Fatalf("checksum not deterministic: %s then %s", base, again)
	}
	cases := []struct {
		name    string
		set     string
		changes bool
	}{
		{"time epsilon", "json:config.sanitizers.time.epsilon=0.7", true},
		{"time window", "config.sanitizers.time.window=12", true},
		{"cohort epsilon", "config.sanitizers.cohort.epsilon=2", true},
		{"brokers", "config.kafka.brokers={a:9092,b:9092}", true},
		{"log level", "config.log.level=debug", true},
		{"listen port", "config.http.listen=:9090", true},
		{"prf key item", "secrets.prfKey.key=other.key", false},
		{"memory limit", "resources.limits.memory=1Gi", false},
		{"pod annotation", "podAnnotations.team=x", false},
		{"enable tls without secret", "config.kafka.tls.enabled=true", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sum(t, tc.set)
			if changed := got != base; changed != tc.changes {
				t.Errorf("--set %s: checksum changed = %v, want %v", tc.set, changed, tc.changes)
			}
		})
	}
}

// TestRejected checks that impossible or unsafe values fail both `helm
// template` and (for schema violations) `helm lint`, with a message naming
// the problem.
func TestRejected(t *testing.T) {
	agg := "config.aggregators[0].name=km,config.aggregators[0].kind=km,config.aggregators[0].window.size=1h,"
	cases := []struct {
		name   string
		file   string
		sets   []string
		want   string
		schema bool // a schema violation: helm lint must reject it too
	}{
		{"unknown top-level key", "", []string{"replicas=2"}, "additional properties 'replicas' not allowed", true},
		{"unknown nested key", "", []string{"config.sanitizers.time.eps=1"}, "additional properties 'eps' not allowed", true},
		{"password in values", "", []string{"config.kafka.sasl.password=hunter2"}, "additional properties 'password' not allowed", true},
		{"key path in values", "", []string{"config.sanitizers.key_file=/tmp/k"}, "additional properties 'key_file' not allowed", true},
		{"negative time epsilon", "", []string{"json:config.sanitizers.time.epsilon=-0.5"}, "at '/config/sanitizers/time/epsilon': exclusiveMinimum", true},
		{"zero cohort epsilon", "", []string{"config.sanitizers.cohort.epsilon=0"}, "at '/config/sanitizers/cohort/epsilon': exclusiveMinimum", true},
		{"negative target loss", "", []string{"config.sanitizers.time.epsilon=null", "config.sanitizers.time.target_loss=-1"}, "at '/config/sanitizers/time/target_loss': exclusiveMinimum", true},
		{"no time epsilon nor target", "", []string{"config.sanitizers.time.epsilon=null"}, "missing property 'epsilon'", true},
		{"window zero", "", []string{"config.sanitizers.time.window=0"}, "at '/config/sanitizers/time/window': minimum", true},
		{"fractional window", "", []string{"json:config.sanitizers.time.window=2.5"}, "at '/config/sanitizers/time/window': got number, want integer", true},
		{"replicas zero", "", []string{"replicaCount=0"}, "at '/replicaCount': minimum", true},
		{"partitions zero", "", []string{"input.partitions=0"}, "at '/input/partitions': minimum", true},
		{"empty cohorts", "", []string{"config.schema.cohorts={}"}, "at '/config/schema/cohorts': minItems", true},
		{"one cohort with rrr", "", []string{"config.schema.cohorts={a}"}, "at '/config/schema/cohorts': minItems", true},
		{"duplicate cohorts", "", []string{"config.schema.cohorts={a,a}"}, "at '/config/schema/cohorts': items at", true},
		{"time_max zero", "", []string{"config.schema.time_max=0"}, "at '/config/schema/time_max': minimum", true},
		{"time public while sanitized", "", []string{"config.schema.public={event,time}"}, "at '/config/schema/public': 'not' failed", true},
		{"cohort public while sanitized", "", []string{"config.schema.public={cohort}"}, "at '/config/schema/public': 'not' failed", true},
		{"id public", "", []string{"config.sanitizers.time.mechanism=none,config.schema.public={event,id}"}, "at '/config/schema/public/1'", true},
		{"server name without tls", "", []string{"config.kafka.tls.server_name=kafka"}, "at '/config/kafka/tls/server_name': maxLength", true},
		{"username without sasl", "", []string{"config.kafka.sasl.username=u"}, "at '/config/kafka/sasl/username': maxLength", true},
		{"file ledger", "", []string{"config.ledger.file=/tmp/ledger"}, "at '/config/ledger/file': maxLength", true},
		{"aggregator parameter outside params", "", []string{agg + "config.aggregators[0].epsilon=1,config.aggregators[0].bin_width=7"}, "additional properties 'bin_width' not allowed", true},
		{"cumulative without horizon", "", []string{agg + "config.aggregators[0].epsilon=1,config.aggregators[0].window.cumulative=true"}, "at '/config/aggregators/0/window': missing property 'horizon'", true},
		{"horizon zero", "", []string{agg + "config.aggregators[0].epsilon=1,config.aggregators[0].window.horizon=0"}, "at '/config/aggregators/0/window/horizon': minimum", true},
		{"bad checkpoint interval", "", []string{"config.ledger.checkpoint_interval=5"}, "at '/config/ledger/checkpoint_interval'", true},
		{"bad drain timeout", "", []string{"config.ledger.drain_timeout=30"}, "at '/config/ledger/drain_timeout'", true},
		{"fit arrow topic is sanitized topic", "", []string{"config.output.fit_arrow_topic=ehr.tte.sanitized"}, "must be distinct", false},
		{"derived fit arrow topic is input", "", []string{"config.input.topic=f.arrow,config.output.fit_topic=f"}, "must be distinct", false},
		{"config partitions disagree", "", []string{"config.input.partitions=3"}, "config.input.partitions (3) differs from input.partitions (1)", false},
		{"no brokers", "", []string{"config.kafka.brokers=null"}, "missing property 'brokers'", true},
		{"unknown sasl mechanism", "", []string{"config.kafka.sasl.mechanism=gssapi"}, "at '/config/kafka/sasl/mechanism': value must be one of", true},
		{"unknown format", "", []string{"config.input.format=csv"}, "at '/config/input/format': value must be one of", true},
		{"negative budget", "", []string{"config.ledger.budget.stream=-1"}, "at '/config/ledger/budget/stream': exclusiveMinimum", true},
		{"root user", "", []string{"securityContext.runAsUser=0"}, "at '/securityContext/runAsUser': minimum", true},
		{"listen without port", "", []string{"config.http.listen=localhost"}, "at '/config/http/listen': 'localhost' does not match pattern", true},
		{"aggregator negative epsilon", "", []string{agg + "config.aggregators[0].epsilon=-1"}, "at '/config/aggregators/0/epsilon': exclusiveMinimum", true},
		{"aggregator unknown kind", "", []string{agg + "config.aggregators[0].epsilon=1,config.aggregators[0].kind=cox"}, "at '/config/aggregators/0/kind': value must be one of", true},
		{"aggregator window unknown key", "", []string{agg + "config.aggregators[0].epsilon=1,config.aggregators[0].window.sizes=2h"}, "additional properties 'sizes' not allowed", true},
		{"hpa above partitions", "", []string{"autoscaling.enabled=true,autoscaling.maxReplicas=4"},
			"autoscaling.maxReplicas (4) > input.partitions (1)", false},
		{"scaled example above partitions", "scaled.yaml", []string{"input.partitions=6"},
			"autoscaling.maxReplicas (12) > input.partitions (6)", false},
		{"hpa min above max", "", []string{"input.partitions=4,autoscaling.enabled=true,autoscaling.minReplicas=3,autoscaling.maxReplicas=2"},
			"autoscaling.minReplicas (3) > autoscaling.maxReplicas (2)", false},
		{"replicas above partitions", "", []string{"replicaCount=3"}, "replicaCount (3) > input.partitions (1)", false},
		{"sasl without secret", "", []string{"config.kafka.sasl.mechanism=scram-sha-512,config.kafka.sasl.username=u"},
			"secrets.kafka.existingSecret is empty", false},
		{"client cert without key", "mtls.yaml", []string{"secrets.tls.keyKey="}, "must be set together", false},
		{"epsilon and target loss", "", []string{"config.sanitizers.time.target_loss=3"}, "set epsilon or target_loss, not both", false},
		{"dead letter is sanitized topic", "", []string{"config.output.dead_letter_topic=ehr.tte.sanitized"}, "must be distinct", false},
		{"sanitized is input topic", "", []string{"config.output.sanitized_topic=ehr.tte"}, "must be distinct", false},
		{"loopback listen", "", []string{"config.http.listen=127.0.0.1:8080"}, "a loopback address is unreachable", false},
		{"localhost listen", "", []string{"config.http.listen=localhost:8080"}, "a loopback address is unreachable", false},
		{"empty kafka peer", "", []string{"json:networkPolicy.kafkaPeers=[{}]"}, "at '/networkPolicy/kafkaPeers/0': minProperties", true},
		{"budget ratio above 1", "", []string{"json:prometheusRule.budgetRatio=1.5"}, "at '/prometheusRule/budgetRatio': maximum", true},
		{"bad alert duration", "", []string{"prometheusRule.notReadyFor=5 minutes"}, "at '/prometheusRule/notReadyFor'", true},
		{"selector with braces", "", []string{`prometheusRule.selector={job="x"}`}, "at '/prometheusRule/selector'", true},
		{"dashboard without sidecar label", "", []string{"dashboard.enabled=true,dashboard.labels=null"}, "missing property 'labels'", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.file != "" {
				file = filepath.Join(chartDir, "examples", tc.file)
			}
			vals := values(t, file, tc.sets...)
			_, err := render(t, vals)
			if err == nil {
				t.Fatalf("render accepted %v", tc.sets)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render error %q does not mention %q", err, tc.want)
			}
			if tc.schema {
				msgs := lintChart(vals)
				found := false
				for _, m := range msgs {
					found = found || strings.Contains(m.Error(), tc.want)
				}
				if !found {
					t.Errorf("helm lint did not report %q; got %v", tc.want, msgs)
				}
			}
		})
	}
}

// TestAccepted checks values close to the rejected ones that must render, so
// that TestRejected cannot pass by rejecting everything.
func TestAccepted(t *testing.T) {
	agg := "config.aggregators[0].name=km,config.aggregators[0].kind=km,config.aggregators[0].window.size=1h,config.aggregators[0].epsilon=1"
	cases := []struct {
		name string
		sets []string
		ok   func(t *testing.T, r rendered)
	}{
		{"hpa at partitions", []string{"input.partitions=4,autoscaling.enabled=true,autoscaling.maxReplicas=4"}, func(t *testing.T, r rendered) {
			if n := toInt(mustGet(t, r.one(t, "HorizontalPodAutoscaler"), "spec", "maxReplicas")); n != 4 {
				t.Errorf("maxReplicas %d", n)
			}
		}},
		{"replicas at partitions", []string{"input.partitions=3,replicaCount=3"}, nil},
		{"target loss instead of epsilon", []string{"config.sanitizers.time.epsilon=null", "config.sanitizers.time.target_loss=3"}, func(t *testing.T, r rendered) {
			cfg, _ := configOf(t, r)
			if _, ok := get(cfg, "sanitizers", "time", "epsilon"); ok {
				t.Errorf("epsilon still rendered")
			}
			if v := toFloat(mustGet(t, cfg, "sanitizers", "time", "target_loss")); v != 3 {
				t.Errorf("target_loss %v", v)
			}
		}},
		{"time declared public without mechanism", []string{"config.sanitizers.time.mechanism=none,config.schema.public={event,time}"}, nil},
		{"cumulative with horizon", []string{agg + ",config.aggregators[0].window.cumulative=true,config.aggregators[0].window.horizon=30"}, nil},
		{"config partitions agree", []string{"input.partitions=3,config.input.partitions=3"}, nil},
		{"aggregators' drain timeout", []string{"config.ledger.drain_timeout=30s"}, func(t *testing.T, r rendered) {
			cfg, _ := configOf(t, r)
			if v := mustGet(t, cfg, "ledger", "drain_timeout"); v != "30s" {
				t.Errorf("drain_timeout %v not passed through", v)
			}
		}},
		{"one cohort without rrr", []string{"config.schema.cohorts={a}", "config.sanitizers.cohort.mechanism=none"}, nil},
		{"aggregator with kind-specific parameter", []string{agg + ",config.aggregators[0].params.bin_width=7"}, func(t *testing.T, r rendered) {
			cfg, _ := configOf(t, r)
			if v := toInt(mustGet(t, cfg, "aggregators", 0, "params", "bin_width")); v != 7 {
				t.Errorf("bin_width %v not passed through", v)
			}
		}},
		{"listen port", []string{"config.http.listen=0.0.0.0:9090"}, func(t *testing.T, r rendered) {
			if p := toInt(mustGet(t, container(t, r), "ports", 0, "containerPort")); p != 9090 {
				t.Errorf("containerPort %d", p)
			}
		}},
		{"network policy with a kafka ipBlock", []string{`json:networkPolicy={"enabled":true,"kafkaPeers":[{"ipBlock":{"cidr":"10.20.0.0/16"}}]}`}, func(t *testing.T, r rendered) {
			np := r.one(t, "NetworkPolicy")
			if v := mustGet(t, np, "spec", "egress", 0, "to", 0, "ipBlock", "cidr"); v != "10.20.0.0/16" {
				t.Errorf("kafka egress %v", v)
			}
		}},
		{"prometheus rule with a custom selector", []string{`prometheusRule.enabled=true`, `prometheusRule.selector=service="dpsurv"`}, func(t *testing.T, r rendered) {
			expr := fmt.Sprint(mustGet(t, r.one(t, "PrometheusRule"), "spec", "groups", 0, "rules", 0, "expr"))
			if !strings.Contains(expr, `dpsurv_ready{service="dpsurv"}`) {
				t.Errorf("selector not used: %s", expr)
			}
		}},
		{"dashboard in grafana's namespace", []string{"dashboard.enabled=true,dashboard.namespace=monitoring"}, func(t *testing.T, r rendered) {
			for _, cm := range r.byKind("ConfigMap") {
				if _, ok := get(cm, "data", "dpsurv.json"); ok {
					if ns := mustGet(t, cm, "metadata", "namespace"); ns != "monitoring" {
						t.Errorf("dashboard namespace %v", ns)
					}
					return
				}
			}
			t.Errorf("no dashboard ConfigMap")
		}},
		{"pdb by minAvailable", []string{"podDisruptionBudget.maxUnavailable=", "podDisruptionBudget.minAvailable=50%"}, func(t *testing.T, r rendered) {
			if v := mustGet(t, r.one(t, "PodDisruptionBudget"), "spec", "minAvailable"); v != "50%" {
				t.Errorf("minAvailable %v", v)
			}
		}},
		{"service monitor on", []string{"serviceMonitor.enabled=true"}, nil},
		{"tls with system roots", []string{"config.kafka.tls.enabled=true"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals := values(t, "", tc.sets...)
			r := mustRender(t, vals)
			checkInvariants(t, r, effective(t, vals))
			if tc.ok != nil {
				tc.ok(t, r)
			}
		})
	}
}

func ifThen(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return -1
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return -1
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// walk calls f for every leaf and inner node of decoded YAML with a dotted
// path.
func walk(v any, path string, f func(path string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			f(p, c)
			walk(c, p, f)
		}
	case []any:
		for i, c := range x {
			walk(c, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}
