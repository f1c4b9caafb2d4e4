package archtest

import (
	"slices"
	"strings"
	"testing"
)

// The runtime is the runtime only: pipeline imports message and
// retry of ours and nothing else (no codec, no sanitizer, no
// aggregator, no Kafka client), so that a processor, a source or a sink
// is added without the runtime knowing it. Its non-test production files
// are what counts (go list's Imports); its tests may use anything.
func TestPipelineImportsOnlyMessageAndRetry(t *testing.T) {
	const module = "github.com/dpsurv/dpsurv/"
	allowed := []string{module + "message", module + "retry"}
	imports := modulePackages(t)[module+"pipeline"].Imports
	if !slices.Contains(imports, "context") {
		t.Fatalf("go list listed pipeline's imports as %q; want its real imports (context among them)", imports)
	}
	var ours []string
	for _, imp := range imports {
		if !strings.HasPrefix(imp, module) {
			continue // the standard library and third-party modules
		}
		ours = append(ours, imp)
		if !slices.Contains(allowed, imp) {
			t.Errorf("pipeline imports %s; the runtime may import only %q of ours (move what needs it beside its users: a processor to processors/, wiring to app)", imp, allowed)
		}
	}
	if len(ours) == 0 {
		t.Errorf("pipeline imports nothing of ours; want message at least (is the module path %q right?)", module)
	}
	if slices.Contains(imports, "github.com/segmentio/kafka-go") {
		t.Errorf("pipeline imports kafka-go")
	}
}
