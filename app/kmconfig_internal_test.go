package app

import (
	"fmt"
	"testing"
)

// parseKMConfig is a validated config for the package's internal tests:
// one km aggregate (ε 0.5, weekly windows) on a file ledger that is never
// opened, no reachable broker, with output (a YAML flow mapping of the
// output section) and budget (of the ledger) given by the test.
func parseKMConfig(t *testing.T, output, budget string) Config {
	t.Helper()
	cfg, err := ParseConfig(fmt.Appendf(nil, `
kafka: {brokers: ["127.0.0.1:1"]}
input: {topic: in}
schema: {time_max: 100, cohorts: [a, b]}
sanitizers:
  key_file: /unused
  time: {mechanism: te, epsilon: 0.1, window: 10}
  cohort: {mechanism: rrr, epsilon: 1}
output: %s
aggregators:
  - {name: km, kind: km, epsilon: 0.5, window: {size: 168h}}
ledger: {file: /tmp/unused-ledger, budget: %s}
`, output, budget))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
