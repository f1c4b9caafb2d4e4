package archtest

import (
	"sort"
	"strings"
	"testing"
)

const module = "github.com/dpsurv/dpsurv"

// floors is the tree's layering, bottom up: a package's production code
// imports packages of its own floor or below, never above. Every package
// of the module has exactly one floor; a new package is placed here when
// it is added (the test fails until it is). Test files may import across
// floors (an external test of a codec may use the validator above it).
var floors = []struct {
	name     string
	packages []string
}{
	{"utilities", []string{
		"", // the module's root package (version)
		"message", "varint", "retry", "buildinfo", "broker/brokertest/freeport",
		"internal/testtier", "internal/datasets", "internal/privacy", "internal/benchtest", "internal/doctable", "internal/stattest", "internal/gofiles",
	}},
	{"codecs", []string{
		"codecs/arrowipc", "codecs/arrowipc/arrowipctest", "codecs/csvrec", "codecs/csvrec/csvrectest", "codecs/jsonrec",
	}},
	{"contracts and numeric core", []string{
		"schemas", "schemas/schemastest", "dp", "survival", "projection", "synth", "plots", "plots/plotstest",
	}},
	{"estimators and mechanisms", []string{
		"dpfit", "dpfit/km", "dpfit/weibull", "regression", "sanitizers", "baselines", "audit", "audit/audittest", "ledger",
	}},
	// pipeline is the runtime only (imports message and retry,
	// TestPipelineImportsOnlyMessageAndRetry), so it sits on the first
	// floor above the utilities' and everything that plugs into it —
	// processors, sources, sinks, the aggregation engine — above it.
	{"runtime and edges", []string{
		"pipeline", "pipeline/pipelinetest", "processors/sanitize", "aggregators", "files", "sources", "sinks",
		"kafkaconn", "broker", "broker/brokertest", "ledger/kafkaledger",
	}},
	{"service", []string{
		"app", "app/apptest", "cmd/dpsurv-service/servicecmd", "cmd/dpsurv-service/servicecmd/configtest",
	}},
	{"tools and studies", []string{
		"ops/harness", "ops", "ops/windowsrun", "cmd/dpsurv-eval/eval", "cmd/dpsurv-eval/inference", "cmd/dpsurv-sbom/sbom",
	}},
	{"commands", []string{
		"cmd/dpsurv/cli", "cmd/dpsurv/budgetfile", "cmd/dpsurv", "cmd/dpsurv-eval", "cmd/dpsurv-sbom", "cmd/dpsurv-service",
		"examples/consumer", "examples/producer", "internal/doccmd", "internal/archtest",
	}},
}

// No production import climbs back up a floor, and the floors name every
// package of the module (and nothing else).
func TestNoImportClimbsAFloor(t *testing.T) {
	for _, p := range layerViolations(moduleGraph(t)) {
		t.Error(p)
	}
}

// moduleGraph is every package of the module (relative to it, "" for its
// root) with its production imports of the module (go list's Imports:
// test files are not counted).
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	for path, p := range modulePackages(t) {
		pkg, ok := relPath(path)
		if !ok {
			continue
		}
		var deps []string
		for _, imp := range p.Imports {
			if d, ok := relPath(imp); ok {
				deps = append(deps, d)
			}
		}
		graph[pkg] = deps
	}
	return graph
}

// relPath is an import path relative to the module ("" for its root), ok
// false for a path outside the module.
func relPath(imp string) (string, bool) {
	if imp == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(imp, module+"/")
	return rel, ok
}

// layerViolations lists what is wrong with graph (package -> its
// production imports of the module) against floors.
func layerViolations(graph map[string][]string) []string {
	floor := map[string]int{}
	var problems []string
	for i, f := range floors {
		for _, p := range f.packages {
			if _, dup := floor[p]; dup {
				problems = append(problems, "package "+show(p)+" is on two floors")
			}
			floor[p] = i
		}
	}
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		fp, ok := floor[p]
		if !ok {
			problems = append(problems, "package "+show(p)+" has no floor: place it in floors (internal/archtest/layers_test.go)")
			continue
		}
		for _, d := range graph[p] {
			fd, ok := floor[d]
			if ok && fd > fp {
				problems = append(problems, "package "+show(p)+" (floor "+floors[fp].name+") imports "+show(d)+", a floor up ("+floors[fd].name+")")
			}
		}
	}
	for p := range floor {
		if _, ok := graph[p]; !ok {
			problems = append(problems, "floors name "+show(p)+", which is not a package of the module: delete it")
		}
	}
	sort.Strings(problems)
	return problems
}

func show(p string) string {
	if p == "" {
		return "(module root)"
	}
	return p
}

// The checker itself: an import a floor up, a package without a floor
// and a floor naming no package are each caught; sideways and downward
// imports are not.
func TestLayerViolationsCatches(t *testing.T) {
	base := map[string][]string{}
	for _, f := range floors {
		for _, p := range f.packages {
			base[p] = nil
		}
	}
	if v := layerViolations(base); len(v) != 0 {
		t.Fatalf("a graph without imports: %v", v)
	}
	// with is base plus extra, without drop ("-": nothing dropped).
	with := func(extra map[string][]string, drop string) map[string][]string {
		g := map[string][]string{}
		for k, v := range base {
			g[k] = v
		}
		for k, v := range extra {
			g[k] = v
		}
		delete(g, drop)
		return g
	}
	for _, c := range []struct {
		name  string
		graph map[string][]string
		want  string
	}{
		{"up", with(map[string][]string{"dp": {"app"}}, "-"), "package dp (floor contracts and numeric core) imports app, a floor up (service)"},
		{"up from utilities", with(map[string][]string{"retry": {"codecs/csvrec"}}, "-"), "imports codecs/csvrec, a floor up"},
		{"unplaced", with(map[string][]string{"newpkg": nil}, "-"), "package newpkg has no floor"},
		{"stale", with(nil, "dpfit"), "floors name dpfit, which is not a package"},
	} {
		v := layerViolations(c.graph)
		if len(v) != 1 || !strings.Contains(v[0], c.want) {
			t.Errorf("%s: %q, want one problem containing %q", c.name, v, c.want)
		}
	}
	ok := with(map[string][]string{"app": {"dp", "pipeline", "cmd/dpsurv-service/servicecmd"}, "dpfit": {"regression", "dp"}}, "-")
	if v := layerViolations(ok); len(v) != 0 {
		t.Errorf("downward and sideways imports flagged: %v", v)
	}
}
