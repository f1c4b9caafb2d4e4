// Package helmtest tests the dpsurv Helm chart (deploy/helm/dpsurv) with the
// Helm v3 Go SDK: `helm lint` and `helm template` for the default values and
// every file in the chart's examples/ directory, then assertions on the
// rendered objects (hardened securityContext, probes, secret handling,
// config checksum, HPA cap, schema rejections, PDB, opt-in ServiceMonitor,
// dashboard, PrometheusRule and NetworkPolicy), promtool checks and unit
// tests of the alerts, and the dashboard's validation.
//
// It is a separate module (github.com/dpsurv/dpsurv/tools/helm) so that the
// service's module does not depend on Helm and Kubernetes libraries. The
// module also pins the Helm CLI as a Go tool: `go tool helm lint
// ../../deploy/helm/dpsurv` runs the same Helm version the tests use.
//
// The sub-package dockercheck tests the repository's Dockerfile without a
// Docker engine; promcheck runs the dashboard and the alerts against a real
// Prometheus scraping `dpsurv run`.
package helmtest
