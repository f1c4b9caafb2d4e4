package helmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dpsurv/dpsurv/app"
)

// strictDecode decodes a rendered object into its Kubernetes API type and
// fails on any field the type does not have: a misplaced or misspelled
// field (fsGroup in a container's securityContext, env under the pod) is
// what the API server would reject or silently drop.
func strictDecode(t *testing.T, obj object, into any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Errorf("%v %v does not decode strictly: %v", obj["kind"], mustGet(t, obj, "metadata", "name"), err)
	}
}

// validateAPI strictly decodes every rendered object of a core or apps
// kind, and checks the prometheus-operator objects' fields by hand.
func validateAPI(t *testing.T, r rendered) {
	t.Helper()
	for _, o := range r.Objects {
		switch o["kind"] {
		case "Deployment":
			strictDecode(t, o, &appsv1.Deployment{})
		case "Service":
			strictDecode(t, o, &corev1.Service{})
		case "ConfigMap":
			strictDecode(t, o, &corev1.ConfigMap{})
		case "ServiceAccount":
			strictDecode(t, o, &corev1.ServiceAccount{})
		case "NetworkPolicy":
			strictDecode(t, o, &networkingv1.NetworkPolicy{})
		case "ServiceMonitor":
			for _, ep := range mustGet(t, o, "spec", "endpoints").([]any) {
				for k := range ep.(map[string]any) {
					switch k {
					case "port", "path", "interval", "scrapeTimeout", "relabelings", "metricRelabelings":
					default:
						t.Errorf("ServiceMonitor endpoint field %q unknown to this check", k)
					}
				}
			}
		}
	}
}

// Every rendered example and the defaults decode strictly into the API
// types.
func TestRenderedObjectsDecodeStrictly(t *testing.T) {
	files := append([]string{""}, examples(t)...)
	for _, f := range files {
		t.Run(filepath.Base(f+"default"), func(t *testing.T) {
			validateAPI(t, mustRender(t, values(t, f)))
		})
	}
}

// The values teams use to extend a chart (Bitnami/Redpanda names) render
// where Kubernetes expects them and pass the schema, helm lint --strict and
// a strict decode into the API types.
func TestExtensionValues(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		ok   func(t *testing.T, r rendered)
	}{
		{"extraEnv GOMEMLIMIT", []string{`json:extraEnv=[{"name":"GOMEMLIMIT","valueFrom":{"resourceFieldRef":{"resource":"limits.memory"}}},{"name":"GODEBUG","value":"madvdontneed=1"}]`}, func(t *testing.T, r rendered) {
			c := container(t, r)
			if v := mustGet(t, c, "env", 0, "valueFrom", "resourceFieldRef", "resource"); v != "limits.memory" || mustGet(t, c, "env", 0, "name") != "GOMEMLIMIT" {
				t.Errorf("env[0] = %v", mustGet(t, c, "env", 0))
			}
			if v := mustGet(t, c, "env", 1, "value"); v != "madvdontneed=1" {
				t.Errorf("env[1] = %v", v)
			}
		}},
		{"envFrom", []string{`json:envFrom=[{"secretRef":{"name":"proxy-env"}},{"configMapRef":{"name":"tuning"},"prefix":"X_"}]`}, func(t *testing.T, r rendered) {
			c := container(t, r)
			if mustGet(t, c, "envFrom", 0, "secretRef", "name") != "proxy-env" || mustGet(t, c, "envFrom", 1, "prefix") != "X_" {
				t.Errorf("envFrom = %v", mustGet(t, c, "envFrom"))
			}
		}},
		{"extraVolumes and mounts", []string{`json:extraVolumes=[{"name":"ca-bundle","configMap":{"name":"hospital-ca"}}]`, `json:extraVolumeMounts=[{"name":"ca-bundle","mountPath":"/etc/ssl/hospital","readOnly":true}]`}, func(t *testing.T, r rendered) {
			pod := mustGet(t, r.one(t, "Deployment"), "spec", "template", "spec")
			vols := mustGet(t, pod, "volumes").([]any)
			last := vols[len(vols)-1]
			if mustGet(t, last, "name") != "ca-bundle" || mustGet(t, last, "configMap", "name") != "hospital-ca" {
				t.Errorf("last volume %v", last)
			}
			mounts := mustGet(t, container(t, r), "volumeMounts").([]any)
			if m := mounts[len(mounts)-1]; mustGet(t, m, "mountPath") != "/etc/ssl/hospital" {
				t.Errorf("last mount %v", m)
			}
			// The chart's own volumes are still there.
			if len(vols) < 4 {
				t.Errorf("volumes %v", vols)
			}
		}},
		{"initContainers and sidecars", []string{
			`json:initContainers=[{"name":"wait-kafka","image":"busybox:1.36","command":["sh","-c","true"]}]`,
			`json:extraContainers=[{"name":"reloader","image":"ghcr.io/example/config-reloader:1","args":["--signal=HUP"]}]`,
		}, func(t *testing.T, r rendered) {
			pod := mustGet(t, r.one(t, "Deployment"), "spec", "template", "spec")
			if mustGet(t, pod, "initContainers", 0, "name") != "wait-kafka" {
				t.Errorf("initContainers %v", mustGet(t, pod, "initContainers"))
			}
			cs := mustGet(t, pod, "containers").([]any)
			if len(cs) != 2 || mustGet(t, cs[0], "name") != "dpsurv" || mustGet(t, cs[1], "name") != "reloader" {
				t.Errorf("containers %v", cs)
			}
		}},
		{"pod and container security contexts", []string{
			`json:podSecurityContext={"runAsNonRoot":true,"runAsUser":1001,"runAsGroup":1001,"fsGroup":1001,"fsGroupChangePolicy":"OnRootMismatch","supplementalGroups":[2000],"seccompProfile":{"type":"RuntimeDefault"},"seLinuxOptions":{"level":"s0:c123,c456"}}`,
			`json:securityContext.runAsUser=1001`, `json:securityContext.runAsGroup=1001`, `json:securityContext.appArmorProfile={"type":"RuntimeDefault"}`,
		}, func(t *testing.T, r rendered) {
			pod := mustGet(t, r.one(t, "Deployment"), "spec", "template", "spec")
			if toInt(mustGet(t, pod, "securityContext", "supplementalGroups", 0)) != 2000 || mustGet(t, pod, "securityContext", "fsGroupChangePolicy") != "OnRootMismatch" ||
				toInt(mustGet(t, pod, "securityContext", "fsGroup")) != 1001 {
				t.Errorf("pod securityContext %v", mustGet(t, pod, "securityContext"))
			}
			c := container(t, r)
			if toInt(mustGet(t, c, "securityContext", "runAsUser")) != 1001 || mustGet(t, c, "securityContext", "appArmorProfile", "type") != "RuntimeDefault" {
				t.Errorf("container securityContext %v", mustGet(t, c, "securityContext"))
			}
			if _, ok := get(c, "securityContext", "fsGroup"); ok {
				t.Error("fsGroup rendered in the container's securityContext")
			}
		}},
		{"commonLabels", []string{"commonLabels.team=oncology-data", "commonLabels.cost-center=42x", "serviceMonitor.enabled=true", "prometheusRule.enabled=true", "dashboard.enabled=true", "autoscaling.enabled=true"}, func(t *testing.T, r rendered) {
			if len(r.Objects) < 8 {
				t.Fatalf("rendered %d objects", len(r.Objects))
			}
			for _, o := range r.Objects {
				if v, _ := get(o, "metadata", "labels", "team"); v != "oncology-data" {
					t.Errorf("%v %v lacks commonLabels (labels %v)", o["kind"], mustGet(t, o, "metadata", "name"), mustGet(t, o, "metadata", "labels"))
				}
			}
			dep := r.one(t, "Deployment")
			if v, _ := get(dep, "spec", "template", "metadata", "labels", "cost-center"); v != "42x" {
				t.Errorf("pod template lacks commonLabels")
			}
			if _, ok := get(dep, "spec", "selector", "matchLabels", "team"); ok {
				t.Errorf("commonLabels leaked into the immutable selector")
			}
		}},
		{"startupProbe", []string{"probes.startup.enabled=true", "probes.startup.failureThreshold=60"}, func(t *testing.T, r rendered) {
			c := container(t, r)
			if mustGet(t, c, "startupProbe", "httpGet", "path") != "/healthz" || toInt(mustGet(t, c, "startupProbe", "failureThreshold")) != 60 {
				t.Errorf("startupProbe %v", mustGet(t, c, "startupProbe"))
			}
			if _, ok := get(c, "startupProbe", "enabled"); ok {
				t.Error("the chart's enabled switch leaked into the probe")
			}
		}},
		{"startupProbe off by default", nil, func(t *testing.T, r rendered) {
			if p, ok := get(container(t, r), "startupProbe"); ok {
				t.Errorf("startupProbe %v rendered by default", p)
			}
		}},
		{"serviceMonitor namespace and relabelings", []string{"serviceMonitor.enabled=true", "serviceMonitor.namespace=monitoring",
			`json:serviceMonitor.relabelings=[{"sourceLabels":["__meta_kubernetes_pod_node_name"],"targetLabel":"node","action":"replace"}]`,
			`json:serviceMonitor.metricRelabelings=[{"sourceLabels":["__name__"],"regex":"go_.*","action":"drop"}]`,
		}, func(t *testing.T, r rendered) {
			sm := r.one(t, "ServiceMonitor")
			if mustGet(t, sm, "metadata", "namespace") != "monitoring" {
				t.Errorf("ServiceMonitor namespace %v", mustGet(t, sm, "metadata", "namespace"))
			}
			if ns := mustGet(t, sm, "spec", "namespaceSelector", "matchNames", 0); ns != namespace {
				t.Errorf("ServiceMonitor in another namespace selects %v, want the release's %s", ns, namespace)
			}
			if mustGet(t, sm, "spec", "endpoints", 0, "relabelings", 0, "targetLabel") != "node" ||
				mustGet(t, sm, "spec", "endpoints", 0, "metricRelabelings", 0, "action") != "drop" {
				t.Errorf("relabelings %v", mustGet(t, sm, "spec", "endpoints", 0))
			}
		}},
		{"runbook base URL", []string{"prometheusRule.enabled=true", "prometheusRule.runbookURL=https://wiki.hospital.example/dpsurv/v0.1.0/operations"}, func(t *testing.T, r rendered) {
			rule := mustGet(t, r.one(t, "PrometheusRule"), "spec", "groups", 0, "rules", 0)
			if v := mustGet(t, rule, "annotations", "runbook_url"); v != "https://wiki.hospital.example/dpsurv/v0.1.0/operations#dpsurvnotready" {
				t.Errorf("runbook_url %v", v)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals := values(t, "", tc.sets...)
			for _, m := range lintChart(vals) {
				t.Errorf("helm lint --strict: %v", m)
			}
			r := mustRender(t, vals)
			checkInvariants(t, r, effective(t, vals))
			validateAPI(t, r)
			tc.ok(t, r)
		})
	}
}

// SASL/OAUTHBEARER from the chart: the client secret is mounted from
// secrets.kafka (clientSecretKey) and named by file in the config, which the
// service accepts; the schema requires https and the oauth block.
func TestOAuthBearerValues(t *testing.T) {
	sets := []string{"config.kafka.tls.enabled=true", "config.kafka.sasl.mechanism=oauthbearer",
		"config.kafka.sasl.oauth.token_url=https://idp.hospital.example/realms/kafka/protocol/openid-connect/token",
		"config.kafka.sasl.oauth.client_id=dpsurv", "config.kafka.sasl.oauth.scope=kafka", "secrets.kafka.existingSecret=dpsurv-oauth"}
	vals := values(t, "", sets...)
	for _, m := range lintChart(vals) {
		t.Errorf("helm lint --strict: %v", m)
	}
	r := mustRender(t, vals)
	checkInvariants(t, r, effective(t, vals)) // the secret file is mounted from dpsurv-oauth/client-secret
	validateAPI(t, r)
	_, text := configOf(t, r)
	cfg, err := app.ParseConfig([]byte(text))
	if err != nil {
		t.Fatalf("the service refuses the rendered config: %v", err)
	}
	if o := cfg.Kafka.SASL.OAuth; o.ClientSecretFile != "/var/run/dpsurv/kafka/client-secret" || o.ClientID != "dpsurv" || cfg.Kafka.SASL.PasswordFile != "" {
		t.Errorf("rendered sasl %+v", cfg.Kafka.SASL)
	}
	for _, tc := range []struct{ set, want string }{
		{"config.kafka.sasl.oauth.token_url=http://idp/token", "/config/kafka/sasl/oauth/token_url"},
		{"config.kafka.sasl.oauth=null", "/config/kafka/sasl/oauth"},
		{"config.kafka.sasl.username=u", "/config/kafka/sasl/username"},
	} {
		if _, err := render(t, values(t, "", append(append([]string{}, sets...), tc.set)...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.set, err, tc.want)
		}
	}
}

// The schema refuses extension values that would break the chart or
// weaken the pod: the dpsurv container's name, the chart's volume names and
// mount paths, the selector labels, root, privilege, a relative runbook.
func TestExtensionRejected(t *testing.T) {
	cases := []struct{ name, set, want string }{
		{"sidecar named dpsurv", `json:extraContainers=[{"name":"dpsurv","image":"x"}]`, "/extraContainers/0/name"},
		{"sidecar without image", `json:extraContainers=[{"name":"s"}]`, "missing property 'image'"},
		{"init container without name", `json:initContainers=[{"image":"x"}]`, "missing property 'name'"},
		{"volume named config", `json:extraVolumes=[{"name":"config","emptyDir":{}}]`, "/extraVolumes/0/name"},
		{"volume without source", `json:extraVolumes=[{"name":"v"}]`, "/extraVolumes/0"},
		{"mount over /tmp", `json:extraVolumeMounts=[{"name":"v","mountPath":"/tmp"}]`, "/extraVolumeMounts/0/mountPath"},
		{"relative mount path", `json:extraVolumeMounts=[{"name":"v","mountPath":"data"}]`, "/extraVolumeMounts/0/mountPath"},
		{"env without name", `json:extraEnv=[{"value":"1"}]`, "missing property 'name'"},
		{"env with unknown field", `json:extraEnv=[{"name":"A","val":"1"}]`, "additional properties 'val' not allowed"},
		{"selector label in commonLabels", `commonLabels.app\.kubernetes\.io/name=other`, "/commonLabels"},
		{"non-string common label", `json:commonLabels={"a":1}`, "/commonLabels/a"},
		{"pod runAsNonRoot false", `json:podSecurityContext.runAsNonRoot=false`, "/podSecurityContext/runAsNonRoot"},
		{"pod root", `json:podSecurityContext.runAsUser=0`, "/podSecurityContext/runAsUser"},
		{"privileged container", `json:securityContext.privileged=true`, "/securityContext/privileged"},
		{"writable root filesystem", `json:securityContext.readOnlyRootFilesystem=false`, "/securityContext/readOnlyRootFilesystem"},
		{"fsGroup in the container context", `json:securityContext.fsGroup=1000`, "additional properties 'fsGroup' not allowed"},
		{"capabilities not dropped", `json:securityContext.capabilities={"drop":["NET_RAW"]}`, "/securityContext/capabilities/drop"},
		{"capability added", `json:securityContext.capabilities={"drop":["ALL"],"add":["NET_ADMIN"]}`, "additional properties 'add' not allowed"},
		{"unconfined seccomp", `json:podSecurityContext.seccompProfile={"type":"Unconfined"}`, "/podSecurityContext/seccompProfile/type"},
		{"startup probe threshold zero", `probes.startup.failureThreshold=0`, "/probes/startup/failureThreshold"},
		{"startup probe unknown field", `probes.startup.path=/x`, "additional properties 'path' not allowed"},
		{"bad relabel action", `json:serviceMonitor.relabelings=[{"action":"rename"}]`, "/serviceMonitor/relabelings/0/action"},
		{"bad servicemonitor namespace", `serviceMonitor.namespace=Monitoring`, "/serviceMonitor/namespace"},
		{"relative runbook", `prometheusRule.runbookURL=docs/operations.md`, "/prometheusRule/runbookURL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals := values(t, "", tc.set)
			_, err := render(t, vals)
			if err == nil {
				t.Fatalf("render accepted %s", tc.set)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// The monitoring surface is closed by default (issue 22 item 5): with the
// default values a NetworkPolicy admits the HTTP port (/metrics) only from
// the monitoring namespace; the namespace is configurable; egress is left
// open until kafkaPeers names the brokers.
func TestMetricsClosedByDefault(t *testing.T) {
	for _, tc := range []struct {
		name, ns string
		sets     []string
	}{
		{"default", "monitoring", nil},
		{"custom monitoring namespace", "observability", []string{"networkPolicy.monitoringNamespace=observability"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, values(t, "", tc.sets...))
			np := r.one(t, "NetworkPolicy")
			if got := fmt.Sprint(mustGet(t, np, "spec", "policyTypes")); got != "[Ingress]" {
				t.Errorf("policyTypes %s, want [Ingress] without kafkaPeers", got)
			}
			ing := mustGet(t, np, "spec", "ingress").([]any)
			if len(ing) != 1 {
				t.Fatalf("ingress rules %v", ing)
			}
			if ns := mustGet(t, ing[0], "from", 0, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"); ns != tc.ns {
				t.Errorf("ingress from namespace %v, want %s", ns, tc.ns)
			}
			// The only port the pod serves is the one the policy admits.
			port := mustGet(t, container(t, r), "ports", 0, "name")
			if p := mustGet(t, ing[0], "ports", 0, "port"); p != port {
				t.Errorf("policy admits port %v, pod serves %v", p, port)
			}
		})
	}
	// Opting out is explicit.
	if nps := mustRender(t, values(t, "", "networkPolicy.enabled=false")).byKind("NetworkPolicy"); len(nps) != 0 {
		t.Errorf("networkPolicy.enabled=false still renders %d NetworkPolicy", len(nps))
	}
}
