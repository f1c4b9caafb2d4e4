package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// The numeric and privacy core never imports a Kafka client: Kafka stays
// at the edges (sources, sinks, kafkaconn, ledger/kafkaledger, app); the
// runtime (pipeline) is written against message.Source and message.Sink;
// the file edge (files) needs none either.
func TestCoreDoesNotImportKafka(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not found: %v", err)
	}
	core := []string{"dp", "dpfit", "dpfit/km", "dpfit/weibull", "survival", "regression", "sanitizers", "aggregators", "ledger", "message", "files", "pipeline"}
	const banned = "github.com/segmentio/kafka-go"
	for _, pkg := range core {
		t.Run(pkg, func(t *testing.T) {
			path := "github.com/dpsurv/dpsurv/" + pkg
			cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", path)
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("go list -deps %s: %v\n%s", path, err, stderr)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 2 {
				t.Fatalf("go list -deps %s listed %d packages; want the package and its dependencies", path, len(deps))
			}
			for _, d := range deps {
				if d == banned || strings.HasPrefix(d, banned+"/") {
					t.Errorf("%s depends on %s (a path: go mod why -m %s, or go list -deps %s)", path, d, banned, path)
					break
				}
			}
		})
	}
}
