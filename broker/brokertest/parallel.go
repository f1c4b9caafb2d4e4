package brokertest

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// WaitBoundParallel, called from TestMain before m.Run, lets n tests that
// call t.Parallel run at once instead of GOMAXPROCS (go test's default, 2
// on the CI machine), unless -parallel was given. It is for packages whose
// tests mostly wait — on a broker round trip, a session or stall timeout,
// an idle reader, a child process — so that they overlap their waiting
// rather than queue for a core they barely use. Each such test runs on its
// own cluster (Start), so they share nothing. Choose n by how much CPU the
// tests use while they wait: on a saturated machine n tests at once each
// take up to n times longer, and their deadlines must allow for it.
func WaitBoundParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Main is the TestMain of a package of Kafka tests: with parallel > 0 it
// lets that many parallel tests run at once (WaitBoundParallel), then runs
// the tests with RunWithLeakCheck and exits with their code.
func Main(m *testing.M, parallel int) {
	if parallel > 0 {
		WaitBoundParallel(parallel)
	}
	os.Exit(RunWithLeakCheck(m))
}
