package archtest

import (
	"strings"
	"testing"
)

// The numeric and privacy core never imports a Kafka client: Kafka stays
// at the edges (sources, sinks, kafkaconn, ledger/kafkaledger, app); the
// runtime (pipeline) is written against message.Source and message.Sink;
// the file edge (files) needs none either.
func TestCoreDoesNotImportKafka(t *testing.T) {
	core := []string{"dp", "dpfit", "dpfit/km", "dpfit/weibull", "survival", "regression", "sanitizers", "aggregators", "ledger", "message", "files", "pipeline"}
	const banned = "github.com/segmentio/kafka-go"
	pkgs := modulePackages(t)
	for _, pkg := range core {
		t.Run(pkg, func(t *testing.T) {
			path := "github.com/dpsurv/dpsurv/" + pkg
			p, ok := pkgs[path]
			if !ok {
				t.Fatalf("go list ./... did not list %s", path)
			}
			if len(p.Deps) == 0 {
				t.Fatalf("go list lists no dependency of %s; want its dependencies", path)
			}
			for _, d := range p.Deps {
				if d == banned || strings.HasPrefix(d, banned+"/") {
					t.Errorf("%s depends on %s (a path: go mod why -m %s, or go list -deps %s)", path, d, banned, path)
					break
				}
			}
		})
	}
}
